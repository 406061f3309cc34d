#!/bin/bash
# ab.sh OUT ROUNDS N: interleaved rounds of N serial cold creates + first exec against
# the base server (19402) and the new one (19404), pool off; counts the server's and
# spawner's context switches and CPU ticks, and (strace -c) connect/accept4 calls.
out=$1; rounds=$2; n=$3
cnt() { # pid -> "switches ticks"
  local s=0 t
  for f in /proc/$1/task/*/status; do s=$((s + $(awk '/ctxt_switches/{x+=$2} END{print x}' $f))); done
  t=$(awk '{print $14+$15}' /proc/$1/stat); echo "$s $t"
}
for r in $(seq $rounds); do
  for t in base new; do
    port=19402; home=/tmp/c9/hb; [ $t = new ] && { port=19404; home=/tmp/c9/hn; }
    srv=$(pgrep -f "boxkite-server --listen 127.0.0.1:$port"); sp=$(pgrep -P $srv -f spawner)
    strace -f -c -e trace=connect,accept4 --seccomp-bpf -o $out-$t-strace-$r.txt -p $srv -p $sp 2>/dev/null & stp=$!
    sleep 1
    read s0 k0 < <(cnt $srv); read ps0 pk0 < <(cnt $sp)
    res=$(python3 /tmp/c9/cold2.py $port $home $n)
    read s1 k1 < <(cnt $srv); read ps1 pk1 < <(cnt $sp)
    kill -INT $stp; wait $stp 2>/dev/null
    echo "round $r $t $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) server-switches $(( (s1-s0) )) server-ticks $((k1-k0)) spawner-switches $((ps1-ps0)) spawner-ticks $((pk1-pk0)) n $n" >> $out-runs.txt
    echo "$res" | sed "s/^/$t /" >> $out-runs.txt
    python3 /tmp/c9/del.py $port $home
  done
done
