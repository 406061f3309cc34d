#!/bin/bash
# usage: serial.sh VARIANT RUN [N] -> N serial (create, exec true) pairs against a fresh `boxkite up` (pool 20)
set -u
v=$1; i=$2; n=${3:-20}
export BOXKITE_HOME=/tmp/warm12/h2-$v; mkdir -p $BOXKITE_HOME
bk=/tmp/warm12/bin-$v/boxkite
echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
BOXKITE_SERVER_WARM_POOL=20 $bk up --port 19101 --bastion-port 19102 > /tmp/warm12/up-$v-$i.txt 2>&1 || { tail -5 /tmp/warm12/up-$v-$i.txt; exit 1; }
EXECS=2 python3 /tmp/warm12/serial.py 19101 $n 20 > /tmp/warm12/serial-$v-$i.txt
$bk down --yes > /dev/null 2>&1
echo "   loops left: $(losetup -a | grep -c "$BOXKITE_HOME")"
echo "   end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
