import json,sys,collections,datetime,re
f=sys.argv[1]; marks=json.load(open(f+'.marks'))
def sec(ts):
    h,m,s=ts.split(':'); return int(h)*3600+int(m)*60+float(s)
ms=[(n, (t % 86400)) for n,t in marks]
ph=collections.defaultdict(list)
for l in open(f):
    p=l.split(None,2)
    if len(p)<3 or not re.match(r'\d\d:\d\d',p[1]): continue
    t=sec(p[1]); name=None
    for i,(n,mt) in enumerate(ms[:-1]):
        if mt<=t<ms[i+1][1]: name=n
    if name: ph[name].append(p[0]+' '+p[2].rstrip())
for n in ph:
    c=collections.Counter((re.match(r"(<\.\.\. )?(\w+)",x.split(" ",1)[1]) or re.match("(x)(x)","xx")).group(2) for x in ph[n] if not x.split(' ',1)[1].startswith('---') and 'resumed>' not in x.split(' ',1)[1][:40])
    print(n,len(ph[n]),sorted(c.items(),key=lambda kv:-kv[1]))
if len(sys.argv)>2:
    for x in ph[sys.argv[2]]: print(x)
