#!/bin/bash
# ab3.sh OUT ROUNDS N: interleaved rounds of N serial cold creates + first exec
# (cold3.py: the first exec's own faults and CPU in the jail) against cold10's
# first slice (19202: the reservation beside the start) and both slices (19204:
# also the cold sidecar's warm-up after its first /health); pool off.
out=$1; rounds=$2; n=$3
for r in $(seq $rounds); do
  for t in base new; do
    port=19202; home=/tmp/cold10/hnew; [ $t = new ] && { port=19204; home=/tmp/cold10/hnew2; }
    echo "round $r $t $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out-load.txt
    python3 /tmp/cold10/cold3.py $port $home $n cold >> $out-$t.txt
  done
done
