# serialsum.py: per run, p50 of the client's create and first exec (ms) from serial-V-I.txt;
# prints a table and benchstat-format files serial-bench-{base,new}.txt
import statistics as st, glob, re, sys
rows = {}
for f in sorted(glob.glob('serial-*-*.txt')):
    m = re.match(r'serial-(base|new)-(\d+)\.txt', f)
    if not m or m.group(2) == '0': continue
    v, i = m.group(1), int(m.group(2))
    c, fe, tot = [], [], []
    for l in open(f):
        p = l.split()
        if p and p[0] == 'create':
            c.append(float(p[1])); fe.append(float(p[3])); tot.append(float(p[5]))
    rows[(v, i)] = (st.median(c), st.median(fe), st.median(tot), len(c))
out = {'base': open('serial-bench-base.txt', 'w'), 'new': open('serial-bench-new.txt', 'w')}
print('run  variant  create p50  first-exec p50  create->first exec p50  n')
for (v, i), (c, fe, tot, n) in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f'{i:3d}  {v:5s}  {c:8.2f}  {fe:8.2f}  {tot:8.2f}  {n}')
    out[v].write(f'BenchmarkSerialWarmCreate {n} {tot*1e6:.0f} ns/op {c:.3f} create-p50-ms {fe:.3f} first-exec-p50-ms\n')
