#!/usr/bin/env python3
# per-run and median server CPU per create (ms) of ab.sh's bursts; usage: sum.py DIR
import json, sys, glob, statistics as S
d = sys.argv[1]
rows = {}
for v in ('base', 'new'):
    for f in sorted(glob.glob(f'{d}/{v}-*.json'), key=lambda p: int(p.rsplit('-', 1)[1].split('.')[0])):
        r = json.load(open(f)); n = r['N']
        s = r['server_ms']
        row = dict(user=s['user']/n, sys=s['sys']/n, tot=(s['user']+s['sys'])/n, minflt=s['minflt']/n,
                   ctx=(r['server_ctx']['vol']+r['server_ctx']['invol'])/n, fails=r['fails'],
                   p95=r['create_ms']['p95'], load=r['load_start'][0],
                   kw=sum(v for k, v in r['kthreads_ms'].items() if k in ('kworker', 'loopN', 'jbd2/loop'))/n)
        rows.setdefault(v, []).append(row)
        print(f"{v} {f.rsplit('/',1)[1]:12s} server user {row['user']:.2f} sys {row['sys']:.2f} total {row['tot']:.2f} ms/create; minflt {row['minflt']:.1f}; ctxsw {row['ctx']:.1f}; kworker+loop+jbd2 {row['kw']:.2f} ms/create (host-wide); fails {row['fails']}; create p95 {row['p95']:.0f} ms; load {row['load']}")
for k in ('user', 'sys', 'tot', 'minflt', 'ctx', 'kw'):
    b, n = [r[k] for r in rows['base']], [r[k] for r in rows['new']]
    print(f"median {k:6s} base {S.median(b):.2f}  new {S.median(n):.2f}  ({(S.median(n)-S.median(b))/S.median(b)*100:+.1f} %)  n={len(b)}/{len(n)}")
