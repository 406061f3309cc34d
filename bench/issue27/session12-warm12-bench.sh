#!/bin/bash
# usage: bench.sh VARIANT RUN -> one `boxkite bench` (pool 20, 20 sandboxes, 30 execs, concurrency 10) on a fresh `boxkite up`
set -u
v=$1; i=$2
export BOXKITE_HOME=/tmp/warm12/h2-$v; mkdir -p $BOXKITE_HOME
bk=/tmp/warm12/bin-$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=20 $bk up --port 19101 --bastion-port 19102 > /tmp/warm12/up-$v-b$i.txt 2>&1 || { tail -5 /tmp/warm12/up-$v-b$i.txt; exit 1; }
$bk bench --sandboxes 20 --execs 30 --concurrency 10 --json > /tmp/warm12/bench-$v-$i.json 2>/tmp/warm12/bench-$v-$i.err
$bk down --yes > /dev/null 2>&1
python3 - /tmp/warm12/bench-$v-$i.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
F=r['floors']['spawn']['p50_ms']
for k in ['create','create_to_first_exec','exec']:
    v=r.get(k) or {}
    print(' ',k,'p50',v.get('p50_ms'),'ms',v.get('p50_vs_spawn'),'F;','F',F,'load',r['host'].get('load_average_start'))
PY
echo "   end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
