import sys, re, subprocess, collections
# usage: agg.py perf-script-output binary [depth]
txt = open(sys.argv[1]).read()
binary = sys.argv[2]; depth = int(sys.argv[3]) if len(sys.argv) > 3 else 6
events = txt.split('\n\n')
addrs = set()
parsed = []
truepids = set()
for ev in events:
    lines = [l for l in ev.strip().split('\n') if l.strip()]
    if not lines: continue
    head = lines[0]
    m = re.search(r'prev_comm=(\S+) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)', head)
    if not m: continue
    if m.group(4) == 'true': truepids.add(m.group(5))
    if m.group(1) == 'true': truepids.add(m.group(2))
    stack = []
    kern = []
    for l in lines[1:]:
        f = l.split()
        if 'kernel.kallsyms' in l:
            kern.append(f[1].split('+')[0])
        elif 'boxkite-sidecar' in l:
            a = int(f[0], 16) + 0x400000
            stack.append(a); addrs.add(a)
    parsed.append((m.group(1), m.group(2), m.group(3), kern, stack))
addrs = sorted(addrs)
out = subprocess.run(['go', 'tool', 'addr2line', binary], input='\n'.join(hex(a) for a in addrs), capture_output=True, text=True).stdout.split('\n')
sym = {a: out[2*i] for i, a in enumerate(addrs)}
c = collections.Counter()
bythread = collections.Counter()
for comm, pid, st, kern, stack in parsed:
    if comm == 'true' or not stack and not kern: continue
    k = [x for x in kern if x not in ('__schedule', 'schedule', 'entry_SYSCALL_64_after_hwframe', 'do_syscall_64')][:2]
    g = [sym[a] for a in stack]
    g = [x for x in g if not x.startswith('runtime.') or x in ('runtime.mstart','runtime.sysmon','runtime.templateThread','runtime.netpoll','runtime.findRunnable','runtime.stopm','runtime.notesleep','runtime.notetsleep','runtime.forkAndExecInChild1','runtime.entersyscallblock','runtime.exitsyscall','runtime.startTheWorld','runtime.mPark','runtime.handoffp','runtime.schedule','runtime.park_m','runtime.goexit0','runtime.gcBgMarkWorker','runtime.bgsweep','runtime.bgscavenge','runtime.gopark','runtime.usleep','runtime.retake','runtime.gcStart')]
    key = st + ' | ' + ' < '.join(k) + ' | ' + ' < '.join(g[:depth])
    c[key] += 1
    bythread[pid] += 1
n = len(truepids) or 1
print('execs (true pids seen):', len(truepids), 'switches of sidecar threads:', sum(c.values()), 'per exec: %.2f' % (sum(c.values())/n))
print('by thread:', {k: round(v/n,2) for k, v in bythread.items()})
for k, v in c.most_common(40):
    print('%6.2f  %s' % (v/n, k))
