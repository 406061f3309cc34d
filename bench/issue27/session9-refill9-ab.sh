#!/bin/bash
# boxkite bench warm run (pool 40): base (BOXKITE_R9_OFF=1: refills do not wait for calls) vs new, alternated; one build
set -u
d=/tmp/r9
bk=$d/bin/boxkite
for i in ${ROUNDS:-1 2 3 4 5 6}; do for v in ${ORDER:-base new}; do
  export BOXKITE_HOME=$d/home-$v-$i HOME=$d/hh-$v; mkdir -p $HOME
  if [ $v = base ]; then export BOXKITE_R9_OFF=1; else unset BOXKITE_R9_OFF; fi
  echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  BOXKITE_SERVER_WARM_POOL=40 $bk up --port 19200 --bastion-port 19201 > $d/up-$v-$i.txt 2>&1 || { tail -5 $d/up-$v-$i.txt; $bk down --yes >/dev/null 2>&1; continue; }
  $bk bench --sandboxes 20 --execs 30 --concurrency 10 --json > $d/bench-$v-$i.json 2> $d/bench-$v-$i.err
  $bk down --yes > /dev/null 2>&1
  python3 - $d/bench-$v-$i.json <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
F=r['floors']['spawn']['p50_ms']
e=r['exec']; w=r.get('warm_pool') or {}
print('  exec p50 %.2fF p99 %.2fF (%.1f ms) F %.2f ms; pool waited_end %s ms; load %s..%s; failures %d' % (e['p50_vs_spawn'],e['p99_vs_spawn'],e['p99_ms'],F,w.get('waited_end_ms'),r['host']['load_average_start'],r['host']['load_average_end'],len(r.get('failures') or [])))
PY
done; done
