#!/bin/bash
# run-idle.sh BINDIR TAG N [ENV=V...]: a fresh `boxkite up` of BINDIR (warm
# pool off, no lifecycle rate limit, ENV given), N sandboxes created 4 at a
# time, one `true` exec in each, 6 s idle, then idle-count.sh; the sandboxes
# removed; then `boxkite bench --idle N` on the same server.
set -u
bin=$1 tag=$2 n=$3; shift 3
port=${PORT:-19510}
export HOME=/tmp/t12/home-$tag; rm -rf "$HOME"; mkdir -p "$HOME"
out=/tmp/t12/res; mkdir -p $out
echo "== $tag $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
env "$@" BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_RATE_LIFECYCLE=-1 $bin/boxkite up --port $port --bastion-port $((port + 1)) > $out/up-$tag.txt 2>&1 || { tail -3 $out/up-$tag.txt; exit 1; }
srv=$(pgrep -f "$bin/boxkite-server --listen 127.0.0.1:$port")
before_k=$(ps -e -o ppid= | grep -cx ' *2')
seq $n | xargs -P4 -I{} sh -c "$bin/boxkite session create 2>/dev/null | tail -1" > $out/ids-$tag.txt
xargs -P4 -I{} $bin/boxkite exec -s {} -- true < $out/ids-$tag.txt
sleep 6
/tmp/t12/k/idle-count.sh "$srv" > $out/count-$tag.txt
cat $out/count-$tag.txt
xargs $bin/boxkite session rm --yes < $out/ids-$tag.txt > /dev/null 2>&1
$bin/boxkite bench --sandboxes 2 --execs 5 --concurrency 4 --idle "$n" --json > $out/bench-$tag.json 2> $out/bench-$tag.err
python3 -c "
import json
r=json.load(open('$out/bench-$tag.json'))
i=r['idle']; m=i['memory']
print('bench --idle $n: threads p50', m['threads_p50'], 'max', m['threads_max'], '| host threads/sandbox', i.get('host_threads_per_sandbox'), '| host mem/sandbox MiB', round(i.get('host_memory_per_sandbox_bytes',0)/2**20,2), '| cgroup p50 MiB', round(m['p50_bytes']/2**20,2), '| answered', i['answered'], '| load', r['host'].get('load_average_start'), r['host'].get('load_average_end'))
"
$bin/boxkite down --yes > /dev/null 2>&1
echo "after down: my loops $(losetup -a | grep -c home-$tag) my sidecars $(pgrep -fc "$bin/boxkite-sidecar")"
