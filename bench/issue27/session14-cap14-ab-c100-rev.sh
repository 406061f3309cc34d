#!/bin/bash
# Interleaved 100-at-once bursts (burst.py: 100 creates + one exec each, 100 client threads) against
# two `boxkite up` servers, base (h-base, port 19210) and new (h-new, 19220), pool off; the sandboxes
# of each burst deleted before the next. usage: ab-c100.sh OUTDIR PAIRS
set -u
out=$1; n=$2; mkdir -p $out
for i in $(seq 1 $n); do
  for v in new base; do
    python3 /tmp/cap14/burst.py /tmp/cap14/h-$v 100 100 $out/$v-$i.json > $out/$v-$i.txt 2>&1
    python3 /tmp/cap14/cleanup.py /tmp/cap14/h-$v $out/$v-$i.json
    sleep 3
  done
done
