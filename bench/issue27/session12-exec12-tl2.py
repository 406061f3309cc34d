# tl2.py TRACE...: per exec, from a perf trace of the server (read,write,syncfs,fdatasync):
# req->sidecar (client request read .. request written to the sidecar), sidecar (.. its answer read),
# ans->answer (.. the answer written to the client), syncfs and fdatasync durations.
import sys,re,statistics,collections
def parse(f):
    ev=[]
    for l in open(f):
        m=re.match(r'\s*([\d.]+) \(\s*([\d.]*)\s*ms\): \S+/(\d+)\s+(\.\.\. \[continued\]: )?(\w+)\((.*?)\)\s+(=\s*(-?\d+))?',l)
        if not m: continue
        ts,dur,tid,cont,name,args,_,ret=m.groups()
        fd=re.match(r'fd: (\d+)',args)
        ev.append(dict(t=float(ts),d=float(dur) if dur else None,name=name,fd=fd.group(1) if fd else None,ret=int(ret) if ret else None,cont=bool(cont)))
    return ev
out=collections.defaultdict(list)
for f in sys.argv[1:]:
    ev=parse(f)
    w=collections.Counter((e['fd']) for e in ev if e['name']=='write' and e['ret'] and 300<=e['ret']<=330)
    a=collections.Counter((e['fd']) for e in ev if e['name']=='write' and e['ret'] and 460<=e['ret']<=490)
    if not w or not a: continue
    SFD=w.most_common(1)[0][0]; CFD=a.most_common(1)[0][0]
    st=None
    for e in sorted(ev,key=lambda e:e['t']):
        n=e['name']
        if n in('syncfs','fdatasync') and e['d'] is not None: out[n].append(e['d'])
        if n=='read' and e['fd']==CFD and e['ret'] and e['ret']>0 and st is None: st={'t0':e['t']}
        elif st and n=='write' and e['fd']==SFD and 'tw' not in st: st['tw']=e['t']
        elif st and 'tw' in st and n=='read' and e['fd']==SFD and e['ret'] and e['ret']>0 and 'tr' not in st: st['tr']=e['t']+(e['d'] or 0)
        elif st and 'tr' in st and n=='write' and e['fd']==CFD:
            out['req->sidecar'].append(st['tw']-st['t0']); out['sidecar'].append(st['tr']-st['tw']); out['ans->answer'].append(e['t']-st['tr']); st=None
for k in ['req->sidecar','sidecar','ans->answer','syncfs','fdatasync']:
    v=out[k]
    if v: print('%-14s n=%4d p50 %.3f mean %.3f'%(k,len(v),statistics.median(v),statistics.mean(v)))
