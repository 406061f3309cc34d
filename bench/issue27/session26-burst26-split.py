#!/usr/bin/env python3
# perf script --show-task-events output -> CPU by process class (server, spawner, jails) and top functions.
import sys, re, collections
srv=int(sys.argv[1]); N=int(sys.argv[2]); HZ=float(sys.argv[3]); path=sys.argv[4]
parent={}; samples=[]
fork=re.compile(r'PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)')
cur=None
for line in open(path, errors='replace'):
    if 'PERF_RECORD_' in line:
        m=fork.search(line)
        if m and m.group(1)==m.group(2): parent[int(m.group(1))]=int(m.group(3))
        continue
    if line and not line[0].isspace() and line.strip():
        m=re.match(r'\s*(.+?)\s+(\d+)/(\d+)\s+[\d.]+:', line)
        if m: cur=[int(m.group(2)), m.group(1), []]; samples.append(cur)
        continue
    s=line.strip()
    if s and cur is not None:
        parts=s.split(None,1)
        cur[2].append(parts[1] if len(parts)>1 else parts[0])
def cls(pid):
    if pid==srv: return 'server'
    p=pid; chain=[]
    while p in parent and p not in (0,1):
        chain.append(p); q=parent[p]
        if q==srv:
            return 'jail' if True else None
        p=q
    return None
sp=None
bycls=collections.defaultdict(list)
for pid,comm,st in samples:
    c=cls(pid)
    if c=='jail' and 'spawner' in ' '.join(st[:0]): pass
    if c: bycls[(c,comm)].append(st)
for k,v in sorted(bycls.items(), key=lambda kv:-len(kv[1])):
    print(f'{k}: {len(v)/HZ*1000/N:.2f} ms per create ({len(v)} samples)')
for k,v in sorted(bycls.items(), key=lambda kv:-len(kv[1]))[:4]:
    leaf=collections.Counter(st[0] if st else '?' for st in v)
    incl=collections.Counter()
    for st in v:
        for f in set(st): incl[f]+=1
    print(f'\n== {k}: leaf top 15'); [print(f'  {n/len(v)*100:5.1f}%  {f}') for f,n in leaf.most_common(15)]
    print(f'== {k}: inclusive top 45'); [print(f'  {n/len(v)*100:5.1f}%  {f}') for f,n in incl.most_common(45)]
