#!/usr/bin/env python3
# Split perf script output (-F comm,pid,tid,time,ip,sym,dso --show-task-events) of `perf record -a -g`
# into the server, the spawner, the jails (descendants of the server), and kernel threads; per group
# user/kernel (leaf in [kernel]) and inclusive top functions.
import sys, re, collections
path, spid = sys.argv[1], int(sys.argv[2])
top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
parent = {}; comm = {}
samples = []  # (pid, tid, comm, frames[(sym,dso)])
cur = None
fork = re.compile(r'PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)')
hdr = re.compile(r'^(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):\s*$')
for line in open(path, errors='replace'):
    m = fork.search(line)
    if m:
        c, p = int(m.group(1)), int(m.group(3))
        if c != p: parent.setdefault(c, p)
        continue
    if 'PERF_RECORD' in line: continue
    if not line.strip():
        if cur: samples.append(cur); cur = None
        continue
    if not line[0].isspace():
        m = hdr.match(line.rstrip('\n'))
        if m: cur = (int(m.group(2)), int(m.group(3)), m.group(1), [])
        continue
    if cur is not None:
        parts = line.split(None, 1)
        if len(parts) < 2: continue
        rest = parts[1].rstrip()
        dso = rest[rest.rfind('(')+1:-1] if rest.endswith(')') else ''
        sym = rest[:rest.rfind('(')].strip() if rest.endswith(')') else rest
        sym = re.sub(r'\+0x[0-9a-f]+$', '', sym)
        cur[3].append((sym, dso))
if cur: samples.append(cur)
def anc(p):
    seen = 0
    while p in parent and seen < 100:
        if p == spid: return True
        p = parent[p]; seen += 1
    return p == spid
spawner = None
groups = collections.defaultdict(list)
for s in samples:
    pid = s[0]
    if pid == spid: g = 'server'
    elif anc(pid):
        g = 'spawner' if 'spawner' in s[2] or s[2] == 'boxkite-sidecar' and parent.get(pid) == spid and False else 'jail'
    elif s[2].startswith('kworker') or s[2].startswith(('kdamond', 'ksoftirqd', 'rcu', 'jbd2', 'loop', 'ext4', 'xfs')): g = 'kthread:' + re.sub(r'[/:].*', '', s[2])
    else: g = 'other'
    groups[g].append(s)
tot = len(samples)
print(f'samples {tot}')
for g, ss in sorted(groups.items(), key=lambda x: -len(x[1])):
    k = sum(1 for s in ss if s[3] and 'kernel' in s[3][0][1])
    print(f'{g:24s} {len(ss):6d} {100*len(ss)/tot:5.1f}%  kernel-leaf {k}')
for g in sys.argv[4:]:
    ss = groups.get(g, [])
    print(f'\n== {g}: {len(ss)} samples, inclusive')
    inc = collections.Counter()
    for s in ss:
        seen = set(f[0] for f in s[3])
        for f in seen: inc[f] += 1
    for f, n in inc.most_common(top):
        print(f'{n:6d} {100*n/max(1,len(ss)):5.1f}%  {f[:110]}')
