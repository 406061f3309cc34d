# profsum.py PERF_SCRIPT_TXT SIDECAR_PID SIDECAR_BIN: the sidecar's cpu-clock samples by syscall and by Go caller
import sys,subprocess,collections
path,scpid,binp=sys.argv[1],int(sys.argv[2]),sys.argv[3]
samples=[];cur=None
for line in open(path):
    if not line.strip():
        if cur: samples.append(cur); cur=None
        continue
    if not line.startswith('\t') and not line.startswith(' '*8):
        p=line.split(); cur=[int(p[0].split('/')[0]),[]]
    else:
        parts=line.strip().split(None,1); cur[1].append((parts[0],parts[1] if len(parts)>1 else ''))
if cur: samples.append(cur)
rows=[]
for pid,st in samples:
    if pid!=scpid: continue
    ks=[s for ip,s in st if s.startswith('__x64_sys_') or s.startswith('__do_sys')]
    k=ks[-1] if ks else ('pagefault' if any('exc_page_fault' in s for ip,s in st) else '(no syscall)')
    us=[hex(int(ip,16)+0x400000 if int(ip,16)<0x400000 else int(ip,16)) for ip,s in st if s in('[unknown]','')]
    rows.append((k,us[:10]))
addrs=sorted({a for k,u in rows for a in u})
out=subprocess.run(['go','tool','addr2line',binp],input='\n'.join(addrs)+'\n',capture_output=True,text=True).stdout.splitlines()
m={a:out[2*i] for i,a in enumerate(addrs)}
skip=('internal/runtime/syscall','syscall.','runtime.','golang.org/x/sys/unix.','internal/poll.ignoringEINTR','internal/syscall/unix.','os.ignoringEINTR')
c=collections.Counter(); c2=collections.Counter(); leaf=collections.Counter()
for k,u in rows:
    fr=[m[a] for a in u]
    caller=next((f for f in fr if not f.startswith(skip)),fr[0] if fr else '?')
    c[(k,caller)]+=1; c2[k]+=1; leaf[fr[0] if fr else '?']+=1
n=len(rows); print('sidecar samples', n)
print('-- by kernel syscall'); [print('%5.1f%% %s'%(100*v/n,k)) for k,v in c2.most_common(20)]
print('-- by innermost Go function'); [print('%5.1f%% %s'%(100*v/n,k)) for k,v in leaf.most_common(20)]
print('-- by syscall and first non-runtime caller'); [print('%5.1f%% %-22s %s'%(100*v/n,k,cl)) for (k,cl),v in c.most_common(35)]
