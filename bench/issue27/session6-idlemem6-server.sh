#!/bin/bash
# The server's own heap and goroutines per idle sandbox: boxkite up with the
# profiling listener, boxkite bench --idle N, the server's heap (after a GC)
# and goroutines polled while the sandboxes sit idle.
N=${1:-150}
export HOME=/tmp/idlemem6/srv/home; mkdir -p $HOME
bk=/tmp/idlemem6/srv/bin/boxkite
BOXKITE_SERVER_ADMIN_LISTEN=127.0.0.1:16061 BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_RATE_LIFECYCLE=-1 $bk up --port 18561 --bastion-port 12561 > up.txt 2>&1 || { cat up.txt; exit 1; }
sleep 3
pid=$(pgrep -f "boxkite-server" -n)
sample() { h=$(curl -s "http://127.0.0.1:16061/debug/pprof/heap?gc=1&debug=1" | grep -E "^# (HeapAlloc|HeapInuse|StackInuse|Sys) =" | tr '\n' ' '); g=$(curl -s "http://127.0.0.1:16061/debug/pprof/goroutine?debug=1" | head -1); echo "$(date +%T) $g $h rss=$(grep -E 'RssAnon' /proc/$pid/status | tr -s ' ')"; }
echo "before: $(sample)"
( while sleep 2; do echo "during: $(sample)"; c=$(curl -s "http://127.0.0.1:16061/debug/pprof/goroutine?debug=1" | head -1 | grep -o "[0-9]*$"); if [ "${c:-0}" -gt "${best:-0}" ]; then best=$c; curl -s "http://127.0.0.1:16061/debug/pprof/goroutine?debug=1" > gor-peak.txt; curl -s "http://127.0.0.1:16061/debug/pprof/heap?gc=1" > heap-peak.pprof; fi; done ) > samples.txt &
SP=$!
$bk bench --url http://127.0.0.1:18561 --sandboxes 1 --execs 2 --concurrency 8 --idle $N --json > bench.json 2> bench.err
kill $SP
echo "after delete: $(sample)"
$bk down --yes > /dev/null 2>&1
