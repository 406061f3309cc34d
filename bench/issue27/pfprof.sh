#!/bin/bash
# usage: pfprof.sh TESTBIN SIDECARBIN OUT
set -e
cd /work/wt/createpath/server/local
perf record -q -c 1 -e page-faults -g -o $3.data $1 -test.run '^$' -test.bench 'ColdPhases' -test.benchtime=10x >/dev/null 2>&1
perf script -i $3.data --comms 4,boxkite-sidecar -F comm,ip,sym 2>/dev/null | awk 'BEGIN{RS=""} {n=split($0,L,"\n"); s=""; for(i=2;i<=n;i++){split(L[i],a," "); if (a[1] !~ /^ffffffff/) s=s" "a[1]} print s}' > $3.stacks
python3 - $2 $3.stacks <<'PY'
import subprocess,collections,sys
stacks=[l.split() for l in open(sys.argv[2])]
offs=sorted({x for s in stacks for x in s})
addrs=['0x%x'%(int(o,16)+0x400000) for o in offs]
out=subprocess.run(['go','tool','addr2line',sys.argv[1]],input='\n'.join(addrs)+'\n',capture_output=True,text=True).stdout.split('\n')
sym={o:out[2*i] for i,o in enumerate(offs)}
c=collections.Counter()
for s in stacks:
    fr=[sym.get(x,'?') for x in s]
    key='(none)'
    for f in fr:
        if f.startswith('github.com/boxkite') or (('.init' in f) and not f.startswith('runtime.')):
            key=f;break
        if f in ('runtime.schedinit','runtime.mallocinit','runtime.rt0_go','runtime.mstart','runtime.newm','runtime.gcenable'):
            key=f;break
    c[key]+=1
print(len(stacks),'faults')
for k,v in c.most_common(30): print(v,k)
PY
