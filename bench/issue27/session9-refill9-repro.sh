#!/bin/bash
# usage: repro.sh base|new ROUND — pool 40, one sandbox, 100 execs quiet, 20 claims, execs during the refill, 60 after
set -u
v=$1; i=$2; d=/tmp/r9; bk=$d/bin/boxkite; port=19210
export BOXKITE_HOME=$d/home-rep-$v-$i HOME=$d/hh-$v; mkdir -p $HOME
if [ $v = base ]; then export BOXKITE_R9_OFF=1; else unset BOXKITE_R9_OFF; fi
BOXKITE_SERVER_WARM_POOL=40 $bk up --port $port --bastion-port 19211 > $d/rep-up-$v-$i.txt 2>&1 || { tail -3 $d/rep-up-$v-$i.txt; $bk down --yes >/dev/null 2>&1; exit 1; }
export BOXKITE_URL=http://127.0.0.1:$port BOXKITE_API_KEY=$(sed -n "s/^api_key = '\(.*\)'/\1/p" $BOXKITE_HOME/local.toml)
echo "== repro $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 $d/repro -claims 20 -quiet 100 -after 60 -max-refill 300 -gap 10ms -out $d/repro-$v-$i.txt
echo "   load after $(cut -d' ' -f1-3 /proc/loadavg)"
$bk down --yes >/dev/null 2>&1
