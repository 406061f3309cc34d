#!/bin/bash
# Interleaved 100-at-once bursts (burst.py: 100 creates + one exec each, 100 client threads) against
# two `boxkite up` servers, base (h-base, port 19300) and new (h-new, 19310), warm pool off; the
# sandboxes of each burst deleted before the next. usage: ab.sh OUTDIR PAIRS [N]
set -u
out=$1; n=$2; N=${3:-100}; mkdir -p $out
for i in $(seq 1 $n); do
  for v in base new; do
    python3 /tmp/tm14/burst.py /tmp/tm14/h-$v $N $N $out/$v-$i.json > $out/$v-$i.txt 2>&1
    python3 /tmp/tm14/cleanup.py /tmp/tm14/h-$v $out/$v-$i.json
    sleep 3
  done
done
