#!/bin/bash
# idle.sh N LOAD LABEL: N idle sandboxes (pool off), made 4 at a time with one
# `true` exec each while LOAD busy loops run; then the loops stop, 30 s idle,
# and every sandbox's sidecar threads are counted from /proc/PID/task.
N=$1 LOAD=$2 LABEL=$3 BIN=${BIN:-/tmp/threads27/bk}
export PATH=$BIN:$PATH BOXKITE_HOME=$(mktemp -d /tmp/threads27/home.XXXX)
export BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_RATE_LIFECYCLE=-1
out=/tmp/threads27/idle-$LABEL.txt
boxkite up --port 22100 --bastion-port 22101 >/dev/null || exit 1
host0=$(awk '{split($4,a,"/"); print a[2]}' /proc/loadavg)
pids=()
for i in $(seq $LOAD); do (while :; do :; done) & pids+=($!); done
sleep 20
echo "load at start: $(cat /proc/loadavg)" > $out
mk() { id=$(boxkite session create --lifetime 2h) && boxkite exec -s $id -- true >/dev/null; }
mks=()
for i in $(seq $N); do mk & mks+=($!); if (( i % 4 == 0 )); then wait "${mks[@]}"; mks=(); fi; done
[ ${#mks[@]} -gt 0 ] && wait "${mks[@]}"
echo "load at end of creates: $(cat /proc/loadavg)" >> $out
[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}"
sleep 30
host1=$(awk '{split($4,a,"/"); print a[2]}' /proc/loadavg)
srv=$(pgrep -f "boxkite-server.*state-dir $BOXKITE_HOME" | head -1)
for p in $(pgrep -P $srv -x boxkite-sidecar); do
  grep -q '^boxkite-sidecar.init' <(tr '\0' ' ' < /proc/$p/cmdline) || continue
  cg=$(awk -F: '$2=="pids"{print $3}' /proc/$p/cgroup)
  echo "$p $(cat /sys/fs/cgroup/pids$cg/pids.current) $(ls /proc/$p/task | wc -l)"
done > /tmp/threads27/raw-$LABEL.txt
echo "host threads: $host0 before, $host1 after ($N sandboxes)" >> $out
awk '{print $2}' /tmp/threads27/raw-$LABEL.txt | sort -n > /tmp/threads27/per-$LABEL.txt
echo "sandboxes counted: $(wc -l < /tmp/threads27/per-$LABEL.txt)" >> $out
echo "threads per sandbox histogram:" >> $out; uniq -c /tmp/threads27/per-$LABEL.txt >> $out
boxkite down --yes >/dev/null 2>&1
cat $out
