# batch2.py: runs 15-22 (load 6-9) only: the last 8 runs of each home's server.log, and the client's serial files
import statistics as st, math
exec(open('/tmp/warm12/logsum.py').read().split('allv = {}')[0])
rb, rn = runs('base')[-8:], runs('new')[-8:]
for i, (x, y) in enumerate(zip(rb, rn)):
    print(f'run {15+i}: server create p50 base {st.median(x):6.2f} ms, new {st.median(y):6.2f} ms')
for v, rs in (('base', rb), ('new', rn)):
    with open(f'/tmp/warm12/b2-serverlog-{v}.txt', 'w') as f:
        for r in rs: f.write(f'BenchmarkServerWarmCreate 20 {st.median(r)*1e6:.0f} ns/op\n')
    pooled = sorted(x for r in rs for x in r); q = lambda p: pooled[int(p*(len(pooled)-1))]
    print(f'{v}: pooled n={len(pooled)} p25 {q(.25):.2f} p50 {st.median(pooled):.2f} p75 {q(.75):.2f}')
def client(v, i):
    c, fe, tot = [], [], []
    for l in open(f'/tmp/warm12/serial-{v}-{i}.txt'):
        p = l.split(); c.append(float(p[1])); fe.append(float(p[3])); tot.append(float(p[5]))
    return st.median(c), st.median(fe), st.median(tot)
for v in ('base', 'new'):
    with open(f'/tmp/warm12/b2-client-{v}.txt', 'w') as f:
        for i in range(15, 23):
            c, fe, tot = client(v, i)
            f.write(f'BenchmarkSerialWarmCreate 20 {tot*1e6:.0f} ns/op {c:.3f} create-p50-ms {fe:.3f} first-exec-p50-ms\n')
for i in range(15, 23):
    print(f'run {i}: client create/first/total p50 base', ' '.join(f'{x:.2f}' for x in client('base', i)), ' new', ' '.join(f'{x:.2f}' for x in client('new', i)))
