#!/bin/bash
# usage: bench.sh VARIANT RUN  (binaries in /tmp/warm11/VARIANT); port 19301
set -u
v=$1; i=$2
export HOME=/tmp/warm11/home-$v; mkdir -p $HOME
bk=/tmp/warm11/$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=${POOL:-20} $bk up --port 19301 --bastion-port 19302 > /tmp/warm11/up-$v-$i.txt 2>&1 || { tail -5 /tmp/warm11/up-$v-$i.txt; exit 1; }
$bk bench --sandboxes 20 --execs ${EXECS:-30} --concurrency ${CONC:-10} --json > /tmp/warm11/bench-$v-$i.json 2>/tmp/warm11/bench-$v-$i.err
$bk down --yes > /dev/null 2>&1
python3 - /tmp/warm11/bench-$v-$i.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
F=r['floors']['spawn']['p50_ms']
for k in ['create','create_to_first_exec','exec']:
    v=r.get(k) or {}
    print(' ',k,'p50',v.get('p50_ms'),'ms',v.get('p50_vs_spawn'),'F;','F',F,'load',r['host'].get('load_average_start'))
PY
