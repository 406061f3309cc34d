import sys, collections
# usage: tree.py HZ NOPS COMM ROOTSYM DEPTH < script
hz=float(sys.argv[1]); nops=float(sys.argv[2]); comm=sys.argv[3]; root=sys.argv[4]; depth=int(sys.argv[5])
cnt=collections.Counter(); cur=None; stack=[]
def flush():
    if cur!=comm: return
    st=list(reversed(stack))  # outermost first
    for i,f in enumerate(st):
        if f==root:
            path=tuple(st[i:i+depth+1])
            for d in range(1,len(path)+1): cnt[path[:d]]+=1
            break
for line in sys.stdin:
    if not line.strip():
        flush(); cur=None; stack=[]; continue
    if not line.startswith((' ','\t')):
        cur=line.split()[0]; continue
    f=line.split()
    if len(f)>=2: stack.append(f[1].split('+')[0])
flush()
def show(prefix, ind):
    kids=[(k,v) for k,v in cnt.items() if len(k)==len(prefix)+1 and k[:len(prefix)]==prefix]
    for k,v in sorted(kids,key=lambda x:-x[1]):
        ms=v/hz*1000/nops
        if ms<0.02: continue
        print("  "*ind+f"{ms:6.3f} {k[-1]}")
        show(k, ind+1)
show((),0)
