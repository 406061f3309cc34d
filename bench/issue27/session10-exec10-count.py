import sys, re, collections
kids=set(); rows=[]
for line in open(sys.argv[1]):
    m=re.match(r'(\d+)\s+(?:<\.\.\. )?(\w+)', line)
    if not m: continue
    pid, name = m.group(1), m.group(2)
    if 'resumed>' in line and '<...' in line:
        continue  # counted at its start
    if name=='execve' and 'sidecar.test' not in line: kids.add(pid)
    rows.append((pid,name,line))
c=collections.Counter(); execs=0
for pid,name,line in rows:
    if pid in kids: continue
    if name=='clone' and 'CLONE_VFORK' in line: execs+=1
    c[name]+=1
print("execs",execs)
tot=0
for k,v in sorted(c.items(), key=lambda x:-x[1]):
    print(f"{k:20s} {v/execs:7.2f}"); tot+=v
print("total/exec", round(tot/execs,2))
