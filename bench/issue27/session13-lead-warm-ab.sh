#!/bin/bash
# Warm-series A/B: old (095f963) vs new (main) servers, both measured by the new CLI's bench.
# usage: ab.sh ROUNDS
set -u
out=/work/ab13/runs; mkdir -p $out
for r in $(seq 1 ${1:-4}); do
  for v in old new; do
    export HOME=/work/ab13/home-$v; rm -rf $HOME; mkdir -p $HOME
    bin=/work/ab13/$v; [ $v = old ] && bin=/work/nested/old
    echo "== $v round $r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    BOXKITE_SERVER_WARM_POOL=40 $bin/boxkite up --port 18600 --bastion-port 12600 > $out/$v-$r.up 2>&1 || { tail -3 $out/$v-$r.up; continue; }
    /work/ab13/new/boxkite bench --sandboxes 20 --execs 30 --concurrency 10 --json > $out/$v-$r.json 2> $out/$v-$r.err
    $bin/boxkite down --yes > /dev/null 2>&1
    python3 -c "
import json,sys; r=json.load(open('$out/$v-$r.json'))
c=r['create_to_first_exec']; e=r['exec']; f=r['file_write_read_4kib']
print(' F',r['floors']['spawn']['p50_ms'],'c2fe',c['p50_ms'],c['p50_vs_spawn'],'exec',e['p50_ms'],e['p50_vs_spawn'],'4k',f['p50_ms'],f['p50_vs_spawn'],'fail',len(r.get('failures') or []))"
  done
done
