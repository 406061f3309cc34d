#!/bin/bash
# usage: strace1.sh VARIANT GAP  -- one warm create on a fresh up (pool 20), strace -f of the server across it
v=$1; gap=$2
export HOME=/tmp/warm10/home-$v
cd /tmp/warm10
BOXKITE_SERVER_WARM_POOL=20 ./$v/boxkite up --port 19301 --bastion-port 19302 > up-s-$v.txt 2>&1 || exit 1
pool=$(find $HOME/.boxkite/server -maxdepth 2 -name pool -type d | head -1)
for i in $(seq 1 200); do n=$(grep -l '"pid":[1-9]' $pool/warm-*/state.json 2>/dev/null | wc -l); [ $n -ge 20 ] && break; sleep 1; done
key=$(grep ^api_key $HOME/.boxkite/local.toml | cut -d"'" -f2); srv=$(awk '{print $1}' $HOME/.boxkite/server.pid)
mk() { curl -s -o /tmp/warm10/sb-$v.json -w "%{http_code} %{time_total}\n" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d '{}' http://127.0.0.1:19301/v1/sandboxes; }
mk   # first create: key touch, first reading
for i in $(seq 1 200); do n=$(grep -l '"pid":[1-9]' $pool/warm-*/state.json 2>/dev/null | wc -l); [ $n -ge 20 ] && break; sleep 1; done
sleep $gap
strace -f -tt -o /tmp/warm10/strace-$v-gap$gap.txt -p $srv 2>/dev/null & sp=$!
sleep 1.5
echo "$v gap $gap ready $n load $(cut -d' ' -f1 /proc/loadavg) $(mk)"
sleep 0.05; kill $sp; wait $sp 2>/dev/null
./$v/boxkite down --yes > /dev/null 2>&1
f=/tmp/warm10/strace-$v-gap$gap.txt
a=$(grep -n '"POST /v1/sandboxes' $f | head -1 | cut -d: -f1); b=$(grep -n 'HTTP/1.1 201' $f | head -1 | cut -d: -f1)
sed -n "${a},${b}p" $f > /tmp/warm10/window-$v-gap$gap.txt
echo "  window lines $((b-a)); without runtime noise: $(grep -vcE 'nanosleep|futex|epoll_pwait|resumed>|SIGURG|rt_sigreturn|tgkill|getpid|sched_yield' /tmp/warm10/window-$v-gap$gap.txt); openat $(grep -c 'openat(' /tmp/warm10/window-$v-gap$gap.txt)"
