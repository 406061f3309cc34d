import subprocess,collections,sys
# usage: pfsum.py SIDECAR STACKS JAILS: page faults of a jail's process by package init / phase
stacks=[l.split() for l in open(sys.argv[2])]
jails=int(sys.argv[3])
offs=sorted({x for s in stacks for x in s})
addrs=['0x%x'%(int(o,16)+0x400000) for o in offs]
out=subprocess.run(['go','tool','addr2line',sys.argv[1]],input='\n'.join(addrs)+'\n',capture_output=True,text=True).stdout.split('\n')
sym={o:out[2*i] for i,o in enumerate(offs)}
c=collections.Counter()
for s in stacks:
    fr=[sym.get(x,'?') for x in s]
    key='runtime (stacks, threads, heap; no package frame)'
    for f in fr:
        if f.startswith('github.com/boxkite') or (('.init' in f) and not f.startswith('runtime.')):
            key=f;break
        if f in ('runtime.schedinit','runtime.mallocinit','runtime.rt0_go','runtime.newm','runtime.gcenable'):
            key=f;break
        if f=='runtime.(*p).destroy': key='runtime.procresize (GOMAXPROCS set at run time)';break
        if f.startswith('regexp.'): key='regexp compile';break
    c[key]+=1
print('# page faults of one jail\'s process (init and sidecar) until its first exec answered,')
print('# mean of %d jails (perf record -c 1 -e page-faults -g on BenchmarkColdPhases -test.benchtime=10x; comm 4 and boxkite-sidecar, so the first exec\'s fork child before its exec is included), by the first package frame' % jails)
print('%7.1f total' % (len(stacks)/jails))
for k,v in c.most_common(40): print('%7.1f %s' % (v/jails, k))
