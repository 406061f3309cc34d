#!/bin/bash
# ab.sh ROUNDS N: base/new alternated; each round: up, perf trace + N serial execs, down
d=/tmp/exec12; port=19210
for i in $(seq 1 $1); do for v in ${VARIANTS:-base new}; do
  export BOXKITE_HOME=$d/home-$v HOME=$d/home-$v; mkdir -p $HOME
  BOXKITE_SERVER_WARM_POOL=0 $d/$v/boxkite up --port $port --bastion-port $((port+1)) > $d/up-$v.txt 2>&1 || { tail -3 $d/up-$v.txt; continue; }
  sp=$(for p in $(pgrep -x boxkite-server); do tr '\0' '\n' < /proc/$p/cmdline | grep -q "^$d/$v/boxkite-server$" && echo $p; done)
  perf trace -p $sp -e read,write,syncfs,fdatasync -o $d/ab-$v-$i.trace 2>/dev/null & pt=$!
  sleep 1
  echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $(SERVER_PID=$sp python3 $d/loop.py $BOXKITE_HOME $2)"
  kill -INT $pt; wait $pt
  $d/$v/boxkite down --yes > /dev/null 2>&1
done; done
