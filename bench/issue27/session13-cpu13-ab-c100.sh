#!/bin/bash
# Interleaved 100-at-once bursts (burst.py: 100 creates + one exec each, 100 client threads) against
# two `boxkite up` servers, base (h-base, port 19300) and new (h-new, 19310), pool off; the sandboxes
# of each burst deleted before the next. usage: ab-c100.sh OUTDIR PAIRS
set -u
out=$1; n=$2; mkdir -p $out
for i in $(seq 1 $n); do
  for v in base new; do
    python3 /work/cpu13/scripts/burst.py /work/cpu13/h-$v 100 100 $out/$v-$i.json > $out/$v-$i.txt 2>&1
    python3 /work/cpu13/scripts/cleanup.py /work/cpu13/h-$v $out/$v-$i.json
    sleep 3
  done
done
