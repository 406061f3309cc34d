#!/usr/bin/env python3
"""waits.py SCRIPT N: the driver's voluntary context switches (sleeps) in a
`perf record -e context-switches -c 1 -g` of BenchmarkDeleteServer
(`perf script -F comm,pid,tid,ip,sym`), by where they were made: under
Driver.Delete (the request path), or under removeLater (the removal after
the answer, session 30), per op of N; and of them the RCU grace-period
waits (synchronize_rcu*, exp_funnel_lock, wait_rcu_gp) and those inside
loopdisk.Unmount or, when another mount namespace still held the disk at
the unmount, in the rmdir of its mount point (removeAll)."""
import sys, re, collections

SCHED = ('__schedule', 'schedule')
# A switch is a preemption, not a sleep, when what called the scheduler
# is one of these (a sleep in task_work at a syscall's exit, as the
# unmount's filesystem shutdown, is a sleep).
INVOL = ('__cond_resched', 'preempt_schedule', 'irqentry_exit', 'exit_to_user_mode_loop',
         'do_sched_yield', '__x64_sys_sched_yield')

def preempted(frames):
    for f in frames:
        if f.startswith(SCHED) and not f.startswith(INVOL):
            continue
        return f.startswith(INVOL)
    return False
RCU = ('synchronize_rcu', 'exp_funnel_lock', 'wait_rcu_gp', '__wait_rcu_gp', 'rcu_sync_enter')

def samples(path):
    cur = None
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line.strip():
            if cur: yield cur
            cur = None
            continue
        if not line[0].isspace():
            if cur: yield cur
            m = re.match(r'(.+?)\s+(\d+)/(\d+)\s*$', line)
            cur = [m.group(1).strip(), int(m.group(2)), []] if m else None
            continue
        parts = line.split(None, 1)
        if cur is not None and len(parts) == 2:
            cur[2].append(parts[1].split('+')[0].strip())
    if cur: yield cur

path, n = sys.argv[1], float(sys.argv[2])
c = collections.Counter()
for comm, pid, frames in samples(path):
    if not comm.endswith('.test'):
        continue  # jails, the spawner's helper, go build
    if preempted(frames):
        continue
    joined = ' '.join(frames)
    if 'removeLater' in joined:
        where = 'after answer'
    elif 'local.(*Driver).Delete' in joined:
        where = 'request path'
    else:
        continue
    c[where, 'sleeps'] += 1
    if any(f.startswith(RCU) for f in frames):
        c[where, 'rcu'] += 1
    if 'loopdisk.Unmount' in joined:
        c[where, 'in Unmount'] += 1
    elif 'local.removeAll' in joined:
        c[where, 'in removeAll'] += 1  # the rmdir of a mount point still mounted elsewhere
for where in ('request path', 'after answer'):
    print('%-13s sleeps %6.2f  rcu %5.2f  in Unmount %5.2f  in removeAll %5.2f  (per op of %d)' % (
        where, c[where, 'sleeps'] / n, c[where, 'rcu'] / n, c[where, 'in Unmount'] / n,
        c[where, 'in removeAll'] / n, n))
