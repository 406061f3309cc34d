#!/bin/bash
# usage: count.sh VARIANT RUN ROUNDS POOL  (binaries in /tmp/warm11/VARIANT); port 19301
# session10-warm10-count.py (perf stat windows per request on the server and the claimed member) against a fresh boxkite up
set -u
v=$1; i=$2; n=${3:-6}; pool=${4:-20}
export HOME=/tmp/warm11/home-$v; mkdir -p $HOME
bk=/tmp/warm11/$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=$pool $bk up --port 19301 --bastion-port 19302 > /tmp/warm11/up-$v-$i.txt 2>&1 || { tail -5 /tmp/warm11/up-$v-$i.txt; exit 1; }
python3 /work/wt/warm11/bench/issue27/session10-warm10-count.py 19301 $n /tmp/warm11/count-$v-$i.json $pool > /tmp/warm11/count-$v-$i.log 2>&1
$bk down --yes > /dev/null 2>&1
echo "   end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
tail -2 /tmp/warm11/count-$v-$i.log
