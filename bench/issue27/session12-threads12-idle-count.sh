#!/bin/bash
# idle-count.sh SERVERPID: per idle sandbox of this server, the sidecar's
# threads and their syscalls, and the kernel threads of its disk.
srv=$1 home=$HOME
inits=$(ps -e -o pid=,ppid=,args= | awk -v s="$srv" '$2==s && /boxkite-sidecar init/{print $1}')
echo "date $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) sidecars(init) $(echo $inits | wc -w)"
for p in $inits; do ls /proc/$p/task | wc -l; done | sort -n | uniq -c | awk '{print "  sidecars with", $2, "threads:", $1}'
for p in $inits; do for t in /proc/$p/task/*; do s=$(cut -d' ' -f1 $t/syscall); [ ${t##*/} = $p ] && s="$s(leader)"; echo $s; done; done | sort | uniq -c | awk '{print "  thread in syscall", $2, "x", $1}'
echo "  (7 ppoll, 202 futex, 271 ppoll, 281 epoll_pwait, 61 wait4)"
loops=$(awk -v h="$home" 'index($2, h"/.boxkite/server/cow/sandboxes/") == 1 && $2 ~ /\/disk$/ {print $1}' /proc/mounts | sed 's#/dev/##')
nl=$(echo $loops | wc -w); nj=0; nd=0
for l in $loops; do ps -e -o comm= | grep -qx "jbd2/$l-8" && nj=$((nj+1)); [ -d /proc/fs/ext4/$l ] && nd=$((nd+1)); done
echo "  sandbox disks mounted $nl: with a jbd2/<loop>-8 thread $nj, ext4 superblocks (/proc/fs/ext4/<loop>) $nd"
echo "  host, one instant: rsv-conversion rescuers $(ps -e -o comm= | grep -c '^kworker/R-ext4-rsv-conversion') = ext4 superblocks $(ls /proc/fs/ext4 | grep -vc '^options$'); jbd2 threads $(ps -e -o comm= | grep -c '^jbd2/') = journals $(ls /proc/fs/jbd2 | wc -l); loop rescuers (kworker/R-loop*) $(ps -e -o comm= | grep -c '^kworker/R-loop')"
