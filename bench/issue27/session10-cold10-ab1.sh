#!/bin/bash
# ab1.sh OUT ROUNDS N: interleaved rounds of N serial cold creates + first exec
# against base (19200) and new (19202), pool off; the load before each round.
out=$1; rounds=$2; n=$3
for r in $(seq $rounds); do
  for t in base new; do
    port=19200; [ $t = new ] && port=19202
    echo "round $r $t $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-load.txt
    python3 /tmp/cold10/cold.py $port /tmp/cold10/h$t $n cold >> $out-$t.txt
  done
done
