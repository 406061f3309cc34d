#!/bin/bash
# usage: session10-warm10-count.sh VARIANT RUN ROUNDS POOL  (binaries in /tmp/warm10/VARIANT)
# Per-phase perf counts (server and claimed member) of warm creates
# against a fresh `boxkite up` with a pool of POOL; port 19301.
set -u
v=$1; i=$2; n=${3:-6}; pool=${4:-1}
export HOME=/tmp/warm10/home-$v; mkdir -p $HOME
bk=/tmp/warm10/$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=$pool $bk up --port 19301 --bastion-port 19302 > /tmp/warm10/up-$v-$i.txt 2>&1 || { tail -5 /tmp/warm10/up-$v-$i.txt; exit 1; }
python3 "$(dirname "$0")/session10-warm10-count.py" 19301 $n /tmp/warm10/count-$v-$i.json $pool > /tmp/warm10/count-$v-$i.log 2>&1
$bk down --yes > /dev/null 2>&1
echo "   end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
tail -2 /tmp/warm10/count-$v-$i.log
