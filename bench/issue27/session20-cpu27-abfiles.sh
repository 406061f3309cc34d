#!/bin/bash
# abfiles.sh OUT ROUNDS: interleaved before/after rounds of filesloop against a real server (pool off).
out=$1; rounds=${2:-4}; mkdir -p $out
export HOME=/tmp/cpu27/home
for i in $(seq 1 $rounds); do for v in before after; do
  bin=/tmp/cpu27/bin-$v
  BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_ADMIN_LISTEN=127.0.0.1:20202 $bin/boxkite up --port 20200 --bastion-port 20201 > $out/up.log 2>&1 || { echo up failed; cat $out/up.log; exit 1; }
  export BK_KEY=$(sed -n "s/api_key = '\(.*\)'/\1/p" $HOME/.boxkite/local.toml)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "== $v $i load $load $(/tmp/cpu27/filesloop/filesloop -n 200)"
  $bin/boxkite down --yes > /dev/null 2>&1
done; done
