#!/usr/bin/env python3
"""Summarise the driver's syscalls per jail start from `strace -f -tt -T`.

A start runs from the openat of .../sidecar.log to the write of
state.json.tmp; only the test process's own threads are counted (the
jail's and the spawner helper's syscalls are listed apart)."""
import re, sys, collections
lines = open(sys.argv[1]).read().splitlines()
pat = re.compile(r'^(\d+)\s+(\S+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)(.*?)(?:<([\d.]+)>)?$')
first = None
threads = set()
starts = []  # list of list of (tid, name, args, ret, dur)
cur = None
for l in lines:
    m = pat.match(l)
    if not m:
        continue
    tid, ts, name, args, ret, rest, dur = m.groups()
    tid = int(tid)
    if first is None:
        first = tid
        threads.add(tid)
    if name in ('clone', 'clone3') and tid in threads and 'CLONE_THREAD' in args and ret not in ('?',) and int(ret) > 0:
        threads.add(int(ret))
    if name == 'openat' and 'sidecar.log' in args and tid in threads:
        cur = []
        starts.append(cur)
    if cur is not None:
        who = 'driver' if tid in threads else 'other'
        cur.append((who, tid, name, args, ret, float(dur or 0)))
    if name == 'write' and 'state.json.tmp' in args and tid in threads and cur is not None:
        cur = None
print(f"{len(starts)} starts traced; driver threads {len(threads)}")
agg = collections.defaultdict(lambda: [0, 0.0])
for s in starts:
    for who, tid, name, args, ret, dur in s:
        if who != 'driver':
            continue
        key = name
        if name == 'write':
            if 'cgroup.procs' in args: key = 'write(cgroup.procs)'
            elif '_map' in args or 'setgroups' in args: key = 'write(id map)'
            elif 'state.json' in args: key = 'write(state.json)'
            elif 'pipe:' in args: key = 'write(pipe)'
            else: key = 'write(other)'
        if name == 'openat':
            if 'cgroup' in args: key = 'openat(cgroup)'
            elif '_map' in args or 'setgroups' in args: key = 'openat(id map)'
            elif 'ns/user' in args: key = 'openat(ns/user)'
            else: key = 'openat(other)'
        agg[key][0] += 1
        agg[key][1] += dur
n = max(1, len(starts))
print(f"{'syscall (driver threads)':28} {'per start':>9} {'ms in call per start':>21}")
for k, (c, d) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{k:28} {c/n:9.1f} {d*1000/n:21.3f}")
if starts and len(sys.argv) > 2:
    for who, tid, name, args, ret, dur in starts[-1]:
        print(who, tid, name, args[:150], ret, dur)
