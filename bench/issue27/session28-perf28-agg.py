import sys, collections, re
# usage: perf script -i X -F comm,pid,ip,sym | python3 agg.py HZ NOPS [sym...]
hz=float(sys.argv[1]); nops=float(sys.argv[2]); syms=sys.argv[3:]
bycomm=collections.Counter(); bysym=collections.Counter(); pids=collections.defaultdict(set)
cur=None; stack=[]
def flush():
    if cur is None: return
    comm=cur
    bycomm[comm]+=1
    seen=set(stack)
    for s in syms:
        for f in seen:
            if re.fullmatch(s,f):
                bysym[(comm,s)]+=1; break
for line in sys.stdin:
    if not line.strip():
        flush(); cur=None; stack=[]; continue
    if not line.startswith((' ','\t')):
        parts=line.split()
        # comm may contain spaces? assume not
        cur=parts[0]; continue
    f=line.split()
    if len(f)>=2: stack.append(f[1].split('+')[0])
flush()
ms=lambda n: n/hz*1000/nops
for c,n in bycomm.most_common(): print(f"{c:20s} {ms(n):8.3f} ms/op ({n} samples)")
for (c,s),n in sorted(bysym.items(), key=lambda x:-x[1]): print(f"  {c:20s} {s:50s} {ms(n):8.3f} ms/op")
