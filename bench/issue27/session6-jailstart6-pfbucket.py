import sys,subprocess,collections
# jprof.py DATA SIDECARBIN [root-symbol]: faults of jail processes (pids that had comm "4"), by pfprof's buckets or below root
data,binf=sys.argv[1],sys.argv[2]; root=sys.argv[3] if len(sys.argv)>3 else None
out=subprocess.run(['perf','script','-i',data,'-F','comm,pid,ip,sym'],capture_output=True,text=True).stdout
evs=[]
jp=set()
for e in out.split('\n\n'):
    if not e.strip(): continue
    ls=e.strip('\n').split('\n'); h=ls[0].split()
    comm,pid=h[0],h[1]
    if comm=='4': jp.add(pid)
    ips=[l.split()[0] for l in ls[1:] if l.split() and not l.split()[0].startswith('ffffffff')]
    evs.append((pid,'0',ips))
evs=[e for e in evs if e[0] in jp]
offs=sorted({x for _,_,s in evs for x in s})
o=subprocess.run(['go','tool','addr2line',binf],input='\n'.join('0x%x'%(int(x,16)+0x400000) for x in offs)+'\n',capture_output=True,text=True).stdout.split('\n')
sym={x:o[2*i] for i,x in enumerate(offs)}
n=len(jp)
c=collections.Counter()
for pid,addr,s in evs:
    fr=[sym.get(x,'?') for x in s]
    if root:
        if root in fr:
            i=fr.index(root); c[' < '.join(fr[max(0,i-4):i])]+=1
        continue
    key='runtime (no package frame)'
    for f in fr:
        if f.startswith('github.com/boxkite') or ('.init' in f and not f.startswith('runtime.')) or f=='main.main':
            key=f;break
        if f in ('runtime.schedinit','runtime.mallocinit','runtime.rt0_go','runtime.newm','runtime.gcenable'):
            key=f;break
        if f.startswith('regexp.'): key='regexp';break
    c[key]+=1
print('%d jail processes, %.1f faults each'%(n,len(evs)/n))
for k,v in c.most_common(int(sys.argv[4]) if len(sys.argv)>4 else 60): print('%7.1f %s'%(v/n,k))
