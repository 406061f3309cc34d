# logsum.py: per `boxkite up` run in h2-V/server.log, the server's own duration of POST /v1/sandboxes (ms)
import re, statistics as st, sys
def runs(v):
    out, cur = [], None
    for l in open(f'/tmp/warm12/h2-{v}/server.log'):
        if l.startswith('--- boxkite up'):
            cur = []; out.append(cur); continue
        if cur is not None and 'msg=request method=POST path=/v1/sandboxes ' in l:
            m = re.search(r'duration=([0-9.]+)(ms|µs|s)\b', l)
            x = float(m.group(1)) * {'ms': 1, 'µs': 1e-3, 's': 1e3}[m.group(2)]
            cur.append(x)
    return [r for r in out if len(r) == 20]
allv = {}
for v in ('base', 'new'):
    rs = runs(v); allv[v] = rs
    with open(f'/tmp/warm12/serverlog-bench-{v}.txt', 'w') as f:
        for r in rs:
            f.write(f'BenchmarkServerWarmCreate 20 {st.median(r)*1e6:.0f} ns/op\n')
for i in range(max(len(allv['base']), len(allv['new']))):
    b = st.median(allv['base'][i]) if i < len(allv['base']) else float('nan')
    n = st.median(allv['new'][i]) if i < len(allv['new']) else float('nan')
    print(f'run {i+1}: server create p50 base {b:6.2f} ms, new {n:6.2f} ms')
for v in ('base', 'new'):
    pooled = sorted(x for r in allv[v] for x in r)
    q = lambda p: pooled[int(p * (len(pooled) - 1))]
    print(f'{v}: pooled n={len(pooled)} p25 {q(.25):.2f} p50 {st.median(pooled):.2f} p75 {q(.75):.2f} ms')
