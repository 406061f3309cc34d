import re,sys,collections,glob
def t(s):
    h,m,x=s.split(':'); return int(h)*3600+int(m)*60+float(x)
line_re=re.compile(r'^(\d+)\s+(\d\d:\d\d:\d\d\.\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]')
def parse(f):
    out=[]
    for l in open(f):
        m=line_re.match(l)
        if not m: continue
        if 'resumed>' in l and '<...' in l: continue  # count calls once (at their start)
        out.append((t(m.group(2)),m.group(3),l))
    return out
tot={k:[collections.Counter() for _ in range(4)] for k in ('srv','sc')}
runs=sorted(glob.glob(sys.argv[1]+'/srv-r*.txt'))
for f in runs:
    srv=parse(f); sc=parse(f.replace('srv-','sc-'))
    marks={}
    for ts,name,l in srv:
        m=re.search(r'warm13-mark-(start|end)-(\d)',l)
        if m: marks[(m.group(1),int(m.group(2)))]=ts
    for i in range(4):
        a,b=marks[('start',i)],marks[('end',i)]
        for k,ev in (('srv',srv),('sc',sc)):
            for ts,name,l in ev:
                if a<ts<b and 'warm13-mark' not in l: tot[k][i][name]+=1
n=len(runs)
for k in ('srv','sc'):
    names=sorted(set().union(*[c.keys() for c in tot[k]]))
    print(f"== {k} (per run, {n} runs): create exec1 exec2 exec3")
    print(f"{'TOTAL':20s}"+''.join(f"{sum(c.values())/n:8.1f}" for c in tot[k]))
    for nm in names:
        v=[c[nm]/n for c in tot[k]]
        print(f"{nm:20s}"+''.join(f"{x:8.1f}" for x in v))
