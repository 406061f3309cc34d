#!/bin/bash
# CPU of a refill: pool 20, 10 creates (claims), then wait for the refill; server+spawner by perf stat, members by /proc/PID/stat.
# usage: count.sh base|new ROUND
set -u
v=$1; i=$2; d=/tmp/r8; bk=$d/bin/boxkite; port=18782
export BOXKITE_HOME=$d/home-cnt-$v-$i HOME=$d/hh-$v; mkdir -p $HOME
if [ $v = base ]; then export BOXKITE_R8_OFF=1; else unset BOXKITE_R8_OFF; fi
BOXKITE_SERVER_WARM_POOL=20 $bk up --port $port --bastion-port 12782 > $d/cnt-up-$v-$i.txt 2>&1 || { tail -3 $d/cnt-up-$v-$i.txt; exit 1; }
key=$(sed -n "s/^api_key = '\(.*\)'/\1/p" $BOXKITE_HOME/local.toml)
ready() { curl -s http://127.0.0.1:$port/metrics | awk '/^boxkite_local_warm_pool_ready /{print $2}'; }
until [ "$(ready)" = 20 ]; do sleep 0.2; done; sleep 1.5
srv=$(ss -ltnp | awk -v p=":$port" '$4 ~ p"$" {print}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
pids=$(pgrep -P $srv | tr '\n' ',')$srv
state=$(ls -d $BOXKITE_HOME/*/ 2>/dev/null); sd=$(dirname $(find $BOXKITE_HOME -maxdepth 3 -type d -name pool | head -1))
before=$(ls $sd/pool)
perf stat -e task-clock,context-switches,page-faults -p $pids -o $d/cnt-perf-$v-$i.txt &
pp=$!
t0=$(date +%s%N)
for k in $(seq 10); do curl -s -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d '{"lifetime_minutes":10}' http://127.0.0.1:$port/v1/sandboxes; done
t1=$(date +%s%N)
until [ "$(ready)" = 20 ]; do sleep 0.05; done
t2=$(date +%s%N)
sleep 1.5
kill -INT $pp; wait $pp 2>/dev/null
# members started by the refill
tot=0; n=0
for m in $(ls $sd/pool); do
  echo "$before" | grep -qx $m && continue
  pid=$(python3 -c "import json;print(json.load(open('$sd/pool/$m/state.json'))['pid'])")
  t=$(awk '{print $14+$15}' /proc/$pid/stat); tot=$((tot+t)); n=$((n+1))
done
echo "$v $i: creates $(( (t1-t0)/1000000 )) ms, refill done $(( (t2-t1)/1000000 )) ms after the last; $n new members: sidecar CPU $((tot*10)) ms total; server+children: $(grep -E 'task-clock|context-switches|page-faults' $d/cnt-perf-$v-$i.txt | awk '{printf "%s %s; ", $1, $2}') load $(cut -d' ' -f1 /proc/loadavg)"
$bk down --yes >/dev/null 2>&1
