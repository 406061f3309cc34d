# Medians per phase and process of session10-warm10-count.py's JSON files.
# usage: session10-warm10-summary.py FILE...
import json, statistics, sys
K = ('raw_syscalls:sys_enter', 'context-switches', 'page-faults', 'task-clock')
for f in sys.argv[1:]:
    rs = json.load(open(f))
    loads = [r['load'] for r in rs]
    print(f'{f}: {len(rs)} rounds, load {min(loads):.1f}-{max(loads):.1f}')
    for ph in ('create', 'first', 'second'):
        for w in ('server', 'sidecar'):
            med = [statistics.median(r[ph][w].get(k, 0) for r in rs) for k in K]
            ms = statistics.median(r['ms'][ph] for r in rs)
            print(f'  {ph:6} {w:7} syscalls {med[0]:6.0f}  ctxsw {med[1]:5.0f}  faults {med[2]:4.0f}  cpu-ms {med[3]:6.2f}   (wall {ms:.1f} ms)')
