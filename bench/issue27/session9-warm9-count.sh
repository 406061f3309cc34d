#!/bin/bash
# usage: count.sh VARIANT RUN ROUNDS  (binaries in /tmp/warm9/VARIANT)
set -u
v=$1; i=$2; n=${3:-6}
export HOME=/tmp/warm9/home-$v; mkdir -p $HOME
bk=/tmp/warm9/$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=1 $bk up --port 19301 --bastion-port 19302 > /tmp/warm9/up-$v-$i.txt 2>&1 || { tail -5 /tmp/warm9/up-$v-$i.txt; exit 1; }
python3 /work/wt/warm9/bench/issue27/session8-claim8-count.py 19301 $n /tmp/warm9/count-$v-$i.json > /tmp/warm9/count-$v-$i.log 2>&1
$bk down --yes > /dev/null 2>&1
tail -2 /tmp/warm9/count-$v-$i.log
