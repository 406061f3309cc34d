#!/bin/bash
# usage: ab.sh OUTDIR ROUNDS -- old and new binaries alternated, cold and warm, ports 19400/19401
set -u
out=${1:?}; rounds=${2:-3}
mkdir -p "$out"
export HOME=$out/home BOXKITE_HOME=$out/home/.boxkite; mkdir -p "$HOME"
# The host root filesystem was full at the time: HOME and the state dir live under /dev/shm (tmpfs).
# (state on tmpfs: the root filesystem is full)
for i in $(seq ${FIRST:-1} $rounds); do
for name in cold warm; do for v in ${VERS:-old new}; do
	pool=0; [ $name = warm ] && pool=40
	bk=/tmp/b13/$v/boxkite
	echo "== $v $name $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg) free $(df -m --output=avail / | tail -1)M"
	BOXKITE_SERVER_WARM_POOL=$pool $bk up --port 19400 --bastion-port 19401 > "$out/$v-$name-$i.up" 2>&1 || { tail -5 "$out/$v-$name-$i.up"; continue; }
	$bk bench --sandboxes 20 --execs 30 --concurrency 10 --json > "$out/$v-$name-$i.json" 2> "$out/$v-$name-$i.err"
	$bk down --yes > /dev/null 2>&1
	echo "   done $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg) $(head -c 200 $out/$v-$name-$i.err)"
done; done; done
