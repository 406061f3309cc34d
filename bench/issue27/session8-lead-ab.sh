#!/bin/bash
# boxkite bench, exec and 4 KiB write+read, base (session 7 end, 0334ac5) vs new, alternated, pool off
# Binaries: CGO_ENABLED=0 go build -trimpath -o /work/ab8/bin{base,new}/ ./cmd/boxkite ./cmd/boxkite-server ./cmd/boxkite-sidecar ./cmd/boxkite-bastion
# from worktrees of 0334ac5 (base) and 136925c (new).
set -u
d=/work/ab8
for i in ${ROUNDS:-1 2 3}; do for v in base new; do
  export HOME=$d/home-$v; mkdir -p $HOME
  bk=$d/bin$v/boxkite
  echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  BOXKITE_SERVER_WARM_POOL=0 $bk up --port 18672 --bastion-port 12672 > $d/up-$v-$i.txt 2>&1 || { tail -5 $d/up-$v-$i.txt; continue; }
  $bk bench --sandboxes 2 --execs 200 --concurrency 1 --json > $d/bench-$v-$i.json 2> $d/bench-$v-$i.err
  $bk down --yes > /dev/null 2>&1
  python3 - $d/bench-$v-$i.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
F=r['floors']['spawn']['p50_ms']
for k in ['exec','file_write_read_4kib']:
    v=r.get(k) or {}
    print(' ',k,'p50',v.get('p50_ms'),'ms',v.get('p50_vs_spawn'),'F; p99',v.get('p99_vs_spawn'),'F; F',F,'load',r['host'].get('load_average_start'))
PY
done; done
