# summarize phases lines: per kind (create, exec1, exec2), median of each interval (ms)
import re, sys, statistics as st, collections
for f in sys.argv[1:]:
    rows = collections.defaultdict(list); last = None
    for l in open(f):
        if 'phases=' not in l: continue
        path = re.search(r'path=(\S+)', l).group(1)
        dur = re.search(r'duration=([\d.]+)(ms|µs|s)', l)
        d = float(dur.group(1)) * {'ms': 1, 'µs': 1e-3, 's': 1e3}[dur.group(2)]
        marks = [(m.split('=')[0], int(m.split('=')[1]) / 1e3) for m in re.search(r'phases="([^"]*)"', l).group(1).split()]
        if path == '/v1/sandboxes': kind = 'create'; n = 0
        else: n += 1; kind = f'exec{n}'
        iv = {}; prev = 0.0
        for name, t in marks:
            iv[name] = t - prev; prev = t
        iv['end'] = d - prev; iv['TOTAL'] = d
        rows[kind].append(iv)
    print(f)
    for kind, ivs in rows.items():
        names = []
        for iv in ivs:
            for k in iv:
                if k not in names: names.append(k)
        print(f'  {kind} n={len(ivs)}: ' + ' '.join(f'{k}={st.median([iv[k] for iv in ivs if k in iv]):.2f}({sum(1 for iv in ivs if k in iv)})' for k in names))
