#!/bin/bash
# trace2.sh TESTBIN BENCH N OUT : perf record of sched + key syscalls over the whole test process tree
bin=$1; bench=$2; n=$3; out=$4
cd /work/wt/exec6/server/local
E=sched:sched_switch,sched:sched_wakeup,sched:sched_waking,sched:sched_process_exec,sched:sched_process_exit,sched:sched_process_fork,sched:sched_migrate_task
for s in clone clone3 write read epoll_pwait waitid execve futex nanosleep; do E=$E,syscalls:sys_enter_$s,syscalls:sys_exit_$s; done
E=$E,exceptions:page_fault_user
perf record -q -o $out -e $E -- $bin -test.run '^$' -test.bench "$bench" -test.benchtime ${n}x 2>&1 | grep Benchmark
