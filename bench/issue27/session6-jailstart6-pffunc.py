import sys,subprocess,collections
data,binf=sys.argv[1],sys.argv[2]; LO=int(sys.argv[3],16); HI=int(sys.argv[4],16)
out=subprocess.run(['perf','script','-i',data,'-F','comm,pid,addr,ip'],capture_output=True,text=True).stdout
jp=set(); evs=[]
for l in out.splitlines():
    p=l.split()
    if len(p)<4: continue
    if p[0]=='4': jp.add(p[1])
    evs.append((p[1],int(p[2],16),p[3]))
ips=collections.Counter(); per=collections.Counter()
for pid,a,ip in evs:
    if pid in jp and LO<a<HI:
        ips[ip]+=1
keys=list(ips)
o=subprocess.run(['go','tool','addr2line',binf],input='\n'.join('0x'+k for k in keys)+'\n',capture_output=True,text=True).stdout.split('\n')
for i,k in enumerate(keys): per[o[2*i]]+=ips[k]
for k,v in per.most_common(25): print('%6.1f %s'%(v/len(jp),k))
