#!/bin/bash
# boxkite bench, exec round trip only, base (Transport) vs new (leanTransport), alternated
set -u
for i in 1 2; do for v in base new; do
  export HOME=/tmp/frame/home-$v; mkdir -p $HOME
  bk=/tmp/frame/bin$v/boxkite
  echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  BOXKITE_SERVER_WARM_POOL=0 $bk up --port 18671 --bastion-port 12671 > /tmp/frame/up-$v-$i.txt 2>&1 || { tail -5 /tmp/frame/up-$v-$i.txt; continue; }
  $bk bench --sandboxes 2 --execs 200 --concurrency 1 --json > /tmp/frame/bench-$v-$i.json 2> /tmp/frame/bench-$v-$i.err
  $bk down --yes > /dev/null 2>&1
  python3 - /tmp/frame/bench-$v-$i.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
F=r['floors']['spawn']['p50_ms']
for k in ['exec','file_write_read_4kib']:
    v=r.get(k) or {}
    print(' ',k,'p50',v.get('p50_ms'),'ms',v.get('p50_vs_spawn'),'F; p99',v.get('p99_vs_spawn'),'F; F',F,'load',r['host'].get('load_average_start'),r['host'].get('load_average_end'))
PY
done; done
