#!/usr/bin/env python3
# Summarise ab-c100.sh results: per run and benchstat-format files (server CPU etc. per create).
import json, sys, glob, os, statistics
d = sys.argv[1]
rows = {'base': [], 'new': []}
for v in rows:
    with open(os.path.join(d, f'bench-{v}.txt'), 'w') as out:
        for f in sorted(glob.glob(os.path.join(d, f'{v}-*.json')), key=lambda p: int(p.rsplit('-', 1)[1].split('.')[0])):
            r = json.load(open(f)); s = r['server_ms']; n = r['N']; j = r['jail_cgroup_ms']
            row = dict(run=os.path.basename(f), load=f"{r['load_start'][0]}-{r['load_end'][0]}", fails=r['fails'],
                       server=(s['user'] + s['sys']) / n, user=s['user'] / n, sys=s['sys'] / n, minflt=s['minflt'] / n,
                       vol=r['server_ctx']['vol'] / n, invol=r['server_ctx']['invol'] / n,
                       jail=(j['user'] + j['sys']) / n, kworker=r['kthreads_ms'].get('kworker', 0) / n,
                       p50=r['create_ms']['p50'], p95=r['create_ms']['p95'], wall=r['wall_s'])
            rows[v].append(row)
            out.write(f"BenchmarkC100 1 {row['server']:.2f} server-cpu-ms/create {row['user']:.2f} server-user-ms/create "
                      f"{row['sys']:.2f} server-sys-ms/create {row['minflt']:.1f} server-minflt/create {row['vol']:.1f} server-volcs/create "
                      f"{row['jail']:.2f} jail-cpu-ms/create {row['p95']:.0f} p95-ms {row['p50']:.0f} p50-ms {row['fails']} fails\n")
for v, rs in rows.items():
    for r in rs:
        print(v, ' '.join(f'{k}={r[k]:.2f}' if isinstance(r[k], float) else f'{k}={r[k]}' for k in r))
    for k in ('server', 'user', 'sys', 'minflt', 'vol', 'jail', 'p95'):
        print(f'  {v} median {k} {statistics.median(r[k] for r in rs):.2f}')
