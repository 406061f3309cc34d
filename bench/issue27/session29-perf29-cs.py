#!/usr/bin/env python3
"""cs.py A.txt [B.txt N]: count context switches (perf record -e cs -c 1 -g,
perf script -F comm,pid,tid,ip,sym) by role and by the kernel frames that
waited. With B and N: (B - A) / N, per iteration of the benchmark."""
import sys, collections, re

SCHED = {'schedule', '__schedule', 'schedule_timeout', 'schedule_preempt_disabled',
         'io_schedule', 'io_schedule_timeout', 'schedule_hrtimeout_range',
         'schedule_hrtimeout_range_clock', 'schedule_idle', 'preempt_schedule_common',
         '__cond_resched', 'preempt_schedule', 'preempt_schedule_irq',
         'preempt_schedule_notrace', 'do_task_dead', '__wait_for_common',
         'wait_for_completion', 'wait_for_completion_state', 'wait_for_completion_killable',
         'wait_for_completion_io', 'schedule_timeout_uninterruptible', 'usleep_range_state',
         'io_schedule_timeout', 'preempt_schedule_thunk', '__x64_sys_sched_yield', 'do_sched_yield'}
INVOL = ('irqentry_exit', 'preempt_schedule', '__cond_resched', 'exit_to_user_mode',
         'syscall_exit_to_user_mode', 'irqentry_exit_to_user_mode', 'do_sched_yield')
RCU = ('synchronize_rcu', '__wait_rcu_gp', 'rcu_sync_enter', 'synchronize_rcu_expedited',
       'synchronize_rcu_normal', 'rcu_barrier', 'synchronize_srcu', 'synchronize_net',
       'rcu_sync_', 'wait_rcu_gp', 'synchronize_rcu_tasks')
LOCK = ('percpu_down_write', 'percpu_rwsem_wait', 'rwsem_down_write_slowpath',
        'rwsem_down_read_slowpath', '__mutex_lock', 'mutex_lock', 'rt_mutex',
        'down_write', 'down_read', '__down', 'percpu_down_read')

def parse(path):
    samples = []
    cur = None
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line.strip():
            if cur: samples.append(cur); cur = None
            continue
        if not line.startswith('\t') and not line.startswith(' '):
            m = re.match(r'(.+?)\s+(\d+)/(\d+)\s*$', line)
            if m:
                if cur: samples.append(cur)
                cur = [m.group(1).strip(), int(m.group(2)), int(m.group(3)), []]
            continue
        parts = line.split(None, 1)
        if cur is not None and len(parts) == 2:
            cur[3].append(parts[1].split('+')[0])
    if cur: samples.append(cur)
    return samples

HELPERS = set()

def role(s, driver):
    comm, pid = s[0], s[1]
    if pid == driver: return 'driver'
    if pid in HELPERS: return 'helper'
    if comm == 'local.test': return 'helper'
    if comm.startswith('boxkite-sidecar') or re.fullmatch(r'[0-9a-f]{15}', comm): return 'jail'
    if comm.startswith('kworker'): return 'kworker'
    return 'other:' + comm

def classify(frames):
    kern = [f for f in frames if not f.startswith('runtime.') and f != '[unknown]']
    # involuntary: preempted (the task stays runnable)
    for f in frames[:4]:
        if f.startswith(INVOL): return 'invol', f
    rcu = any(f.startswith(RCU) for f in frames)
    sig = [f for f in frames if f not in SCHED][:4]
    kind = 'vol'
    if rcu: kind = 'vol-rcu'
    elif any(f.startswith(LOCK) for f in frames[:8]): kind = 'vol-lock'
    return kind, ' < '.join(sig)

def count(path):
    samples = parse(path)
    driver = samples[0][1]
    HELPERS.clear()
    for s in samples:
        if any(f.endswith(('runSpawner', 'ServeSpawner', 'makeSkeleton.func1')) for f in s[3]):
            HELPERS.add(s[1])
    byrole = collections.Counter(); bysig = collections.Counter(); threads = collections.defaultdict(set)
    for s in samples:
        r = role(s, driver)
        kind, sig = classify(s[3])
        byrole[(r, kind)] += 1
        threads[r].add(s[2])
        if kind != 'invol':
            bysig[(r, kind, sig)] += 1
    return byrole, bysig, {r: len(t) for r, t in threads.items()}

a = count(sys.argv[1])
if len(sys.argv) > 2:
    b = count(sys.argv[2]); n = float(sys.argv[3])
    diff = lambda x, y: {k: (y.get(k, 0) - x.get(k, 0)) / n for k in set(x) | set(y)}
    byrole, bysig = diff(a[0], b[0]), diff(a[1], b[1])
    print('# per iteration, (B - A) / %g' % n)
else:
    byrole, bysig = a[0], a[1]
print('## switches by role and kind')
for k, v in sorted(byrole.items(), key=lambda kv: (kv[0][0], -kv[1])):
    if abs(v) >= 0.05: print('%-22s %-9s %8.2f' % (k[0], k[1], v))
print('## voluntary switches by waiting frames (top 60)')
for k, v in sorted(bysig.items(), key=lambda kv: -kv[1])[:60]:
    print('%8.2f  %-8s %-9s %s' % (v, k[0], k[1], k[2]))
