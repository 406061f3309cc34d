#!/bin/bash
# usage: phases.sh VARIANT RUN N  -> serial create+exec pairs against a fresh boxkite up (pool 20), server log kept
set -u
v=$1; i=$2; n=${3:-20}
export HOME=/tmp/warm11/home-$v; mkdir -p $HOME
bk=/tmp/warm11/$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=${POOL:-20} $bk up --port 19301 --bastion-port 19302 > /tmp/warm11/up-$v-$i.txt 2>&1 || { tail -5 /tmp/warm11/up-$v-$i.txt; exit 1; }
log=$HOME/.boxkite/server.log
wc -l < "$log" > /tmp/warm11/logstart
EXECS=${EXECS:-2} python3 /tmp/warm11/serial.py 19301 $n ${POOL:-20} > /tmp/warm11/serial-$v-$i.txt
tail -n +$(( $(cat /tmp/warm11/logstart) + 1 )) "$log" | grep 'msg=request' | grep -v 'GET\|DELETE' > /tmp/warm11/phases-$v-$i.txt
$bk down --yes > /dev/null 2>&1
echo "   end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
