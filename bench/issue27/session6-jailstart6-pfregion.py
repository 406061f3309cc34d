import sys,subprocess,collections
data,binf=sys.argv[1],sys.argv[2]
out=subprocess.run(['perf','script','-i',data,'-F','comm,pid,addr,ip'],capture_output=True,text=True).stdout
segs=[]
for l in subprocess.run(['readelf','-SW',binf],capture_output=True,text=True).stdout.splitlines():
    p=l.replace('[ ','[').split()
    if len(p)>6 and p[0].startswith('[') and p[0]!='[Nr]':
        try: segs.append((int(p[3],16),int(p[3],16)+int(p[5],16),p[1]))
        except: pass
jp=set(); evs=[]
for l in out.splitlines():
    p=l.split()
    if len(p)<4: continue
    if p[0]=='4': jp.add(p[1])
    evs.append((p[1],int(p[2],16),p[3]))
c=collections.Counter(); n=0
for pid,a,ip in evs:
    if pid not in jp: continue
    n+=1
    k=None
    for lo,hi,name in segs:
        if lo<=a<hi: k=name;break
    if k is None:
        if a>=0x7ff000000000: k='high (main thread stack, vdso)'
        elif a>=0x7f0000000000: k='mmap high (runtime off-heap: arenas meta, persistentalloc)'
        elif a<0x400000: k='low (%x)'%a
        else: k='heap arena'
    c[k]+=1
print('%d procs %.1f faults each'%(len(jp),n/len(jp)))
for k,v in c.most_common(): print('%6.1f %s'%(v/len(jp),k))
