#!/bin/bash
# ab.sh OUT ROUNDS N: interleaved rounds of N serial cold creates + first exec
# (cold.py) against base (main bf8c058, 19400) and new (cold11, 19402), pool off.
out=$1; rounds=$2; n=$3
for r in $(seq $rounds); do
  for t in base new; do
    port=19400; [ $t = new ] && port=19402
    echo "round $r $t $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-load.txt
    python3 /tmp/cold11/cold.py $port /tmp/cold11/h$t $n cold >> $out-$t.txt
  done
done
