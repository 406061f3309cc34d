import re,sys,statistics as st
# parse perf script: comm pid/tid [cpu] time: event: trace
rx=re.compile(r'^\s*(.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s?(.*)$')
ev=[]
for line in open(sys.argv[1]):
    m=rx.match(line)
    if not m: continue
    comm,pid,tid,cpu,t,e,tr=m.groups()
    ev.append((float(t)*1e6,int(pid),int(tid),int(cpu),e,tr,comm))
mode=sys.argv[2]  # spawn or sidecar
testpid=None
for x in ev:
    if x[6].startswith('exec6') or x[6].endswith('.test'): testpid=x[1]; break
# children that exec true
forks={}  # child pid -> (t, parent tgid, parent tid)
for x in ev:
    if x[4]=='sched:sched_process_fork':
        c=int(re.search(r'child_pid=(\d+)',x[5]).group(1)); forks[c]=(x[0],x[1],x[2])
execs={}; exits={}
for x in ev:
    if x[4]=='sched:sched_process_exec' and 'true' in x[5]: execs[x[1]]=x[0]
    if x[4]=='sched:sched_process_exit' and x[1]==x[2] and x[1] in execs: exits[x[1]]=x[0]
kids=sorted([c for c in execs if c in exits and c in forks], key=lambda c: forks[c][0])
kids=kids[20:]  # skip warmup
par=forks[kids[0]][1]
print('test',testpid,'parent',par,'n',len(kids))
# clone enter times of parent process
clone_enter=[x[0] for x in ev if x[1]==par and x[4] in('syscalls:sys_enter_clone','syscalls:sys_enter_clone3')]
import bisect
seg={k:[] for k in ['pre(prev exit->clone)','clone->exec','exec->exit','cycle']}
extra={}
idx={}
for i,c in enumerate(kids[:-1]):
    nxt=kids[i+1]
    ft=forks[c][0]; j=bisect.bisect_right(clone_enter,ft)-1; ce=clone_enter[j]
    fn=forks[nxt][0]; jn=bisect.bisect_right(clone_enter,fn)-1; cen=clone_enter[jn]
    seg['clone->exec'].append(execs[c]-ce)
    seg['exec->exit'].append(exits[c]-execs[c])
    seg['pre(prev exit->clone)'].append(cen-exits[c])
    seg['cycle'].append(cen-ce)
    # counts within [ce, cen)
    lo=bisect.bisect_left([e[0] for e in ev],ce) if False else None
idxt=[e[0] for e in ev]
def counts(a,b):
    d={}
    i=bisect.bisect_left(idxt,a); k=bisect.bisect_left(idxt,b)
    for e in ev[i:k]:
        who='test' if e[1]==testpid else ('child' if e[1] in forks and e[1] not in (par,) and e[1]!=testpid and e[1] in execs else 'sidecar')
        key=None
        if e[4]=='sched:sched_switch':
            # count switches out of our tasks
            m=re.search(r'prev_pid=(\d+).*prev_state=(\S+)',e[5])
            if m and int(m.group(1))==e[2]: key='switch-'+( 'vol' if m.group(2).startswith(('S','D')) else 'inv')
        elif e[4]=='exceptions:page_fault_user': key='faults'
        elif e[4]=='sched:sched_migrate_task': key='migr'
        elif e[4].startswith('syscalls:sys_enter_'): key=e[4][19:]
        elif e[4]=='sched:sched_wakeup': key='wakeups'
        if key: d[(who,key)]=d.get((who,key),0)+1
    return d
tot={}
n=0
for i,c in enumerate(kids[:-1]):
    ce=clone_enter[bisect.bisect_right(clone_enter,forks[c][0])-1]
    cen=clone_enter[bisect.bisect_right(clone_enter,forks[kids[i+1]][0])-1]
    for k,v in counts(ce,cen).items(): tot[k]=tot.get(k,0)+v
    n+=1
for k,v in seg.items(): print('%-24s p50 %7.0f us  mean %7.0f'%(k,st.median(v),st.mean(v)))
for k in sorted(tot): print('%-8s %-14s %6.2f per exec'%(k[0],k[1],tot[k]/n))
if mode=='sidecar':
    def first(after, pred):
        i=bisect.bisect_right(idxt,after)
        for e in ev[i:i+20000]:
            if pred(e): return e[0]
        return None
    names=['exit->sc epoll','->sc resp write','->test wake','->test req write','->sc req read','->clone']
    segs={k:[] for k in names}
    for i,c in enumerate(kids[:-1]):
        X=exits[c]
        t1=first(X,lambda e:e[1]==par and e[4]=='syscalls:sys_exit_epoll_pwait' and not e[5].strip().startswith('0x0'))
        t2=first(X,lambda e:e[1]==par and e[4]=='syscalls:sys_enter_write' and 'count: 0x0000014' in e[5] or (e[1]==par and e[4]=='syscalls:sys_enter_write' and int(e[5].split('count: ')[1],16)>200))
        t3=first(t2,lambda e:e[1]==testpid and e[4] in('syscalls:sys_exit_epoll_pwait','syscalls:sys_exit_read','syscalls:sys_exit_futex'))
        t4=first(t2,lambda e:e[1]==testpid and e[4]=='syscalls:sys_enter_write')
        t5=first(t4,lambda e:e[1]==par and e[4]=='syscalls:sys_exit_read' and not e[5].startswith('0xf'))
        t6=clone_enter[bisect.bisect_right(clone_enter,forks[kids[i+1]][0])-1]
        ts=[X,t1,t2,t3,t4,t5,t6]
        if None in ts: continue
        for k,a,b in zip(names,ts,ts[1:]): segs[k].append(b-a)
    for k in names: print('%-20s p50 %6.0f us mean %6.0f'%(k,st.median(segs[k]),st.mean(segs[k])))
if mode=='spawn':
    def first(after, pred):
        i=bisect.bisect_right(idxt,after)
        for e in ev[i:i+20000]:
            if pred(e): return e[0]
    a=[];b=[]
    for i,c in enumerate(kids[:-1]):
        X=exits[c]
        t1=first(X,lambda e:e[1]==par and e[4]=='syscalls:sys_exit_waitid')
        t6=clone_enter[bisect.bisect_right(clone_enter,forks[kids[i+1]][0])-1]
        a.append(t1-X); b.append(t6-t1)
    print('exit->waitid ret p50 %.0f mean %.0f; ->next clone p50 %.0f mean %.0f'%(st.median(a),st.mean(a),st.median(b),st.mean(b)))
