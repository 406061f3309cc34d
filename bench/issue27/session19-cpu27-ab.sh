#!/bin/bash
# ab.sh OUT ROUNDS: interleaved before/after rounds against a real server (pool off):
# 400 `true` execs each, a 2 s Go trace of the server in the middle, split by tracesplit.
out=$1; rounds=${2:-4}; mkdir -p $out
export HOME=/tmp/cpu27/home
for i in $(seq 1 $rounds); do for v in before after; do
  bin=/tmp/cpu27/bin-$v
  BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_ADMIN_LISTEN=127.0.0.1:19102 $bin/boxkite up --port 19100 --bastion-port 19101 > $out/up.log 2>&1 || { echo up failed; cat $out/up.log; exit 1; }
  export BK_KEY=$(sed -n "s/api_key = '\(.*\)'/\1/p" $HOME/.boxkite/local.toml)
  load=$(cut -d' ' -f1 /proc/loadavg)
  /tmp/cpu27/execloop/execloop -n 450 -pause 1s > $out/$v-$i.loop 2>/dev/null &
  sleep 2; curl -s -o $out/$v-$i.trace '127.0.0.1:19102/debug/pprof/trace?seconds=2'
  wait
  echo "== $v $i load $load $(cat $out/$v-$i.loop)"
  /tmp/cpu27/tracesplit/tracesplit $out/$v-$i.trace > $out/$v-$i.split
  $bin/boxkite down --yes > /dev/null 2>&1
done; done
