#!/bin/bash
# Head-to-head of two commits with `boxkite bench` (exec and 4 KiB write+read,
# pool off), base and new alternated round by round so load drifts hit both.
# usage: lead-ab.sh DIR BASE_REV NEW_REV   (ROUNDS="1 2 3" by default; PORT=18672)
# Binaries are built once per commit (CGO_ENABLED=0 -trimpath, as released) into
# DIR/bin{base,new}; every round's raw JSON lands in DIR/bench-{base,new}-N.json.
set -u
d=${1:?dir}; base=${2:?base rev}; new=${3:?new rev}; port=${PORT:-18672}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mkdir -p "$d"
for v in base new; do
	rev=$base; [ $v = new ] && rev=$new
	[ -x "$d/bin$v/boxkite" ] && continue
	wt=$(mktemp -d); git -C "$repo" worktree add -q --detach "$wt" "$rev" || exit 1
	(cd "$wt" && CGO_ENABLED=0 go build -trimpath -o "$d/bin$v/" ./cmd/boxkite ./cmd/boxkite-server ./cmd/boxkite-sidecar ./cmd/boxkite-bastion) || exit 1
	git -C "$repo" worktree remove --force "$wt"
	echo "$rev" > "$d/bin$v/commit"
done
for i in ${ROUNDS:-1 2 3}; do for v in base new; do
	export HOME=$d/home-$v; mkdir -p "$HOME"
	bk=$d/bin$v/boxkite
	echo "== $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
	BOXKITE_SERVER_WARM_POOL=0 $bk up --port "$port" --bastion-port $((port - 6000)) > "$d/up-$v-$i.txt" 2>&1 || { tail -5 "$d/up-$v-$i.txt"; continue; }
	$bk bench --sandboxes 2 --execs 200 --concurrency 1 --json > "$d/bench-$v-$i.json" 2> "$d/bench-$v-$i.err"
	$bk down --yes > /dev/null 2>&1
	python3 - "$d/bench-$v-$i.json" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
F=r['floors']['spawn']['p50_ms']
for k in ['exec','file_write_read_4kib']:
    v=r.get(k) or {}
    print(' ',k,'p50',v.get('p50_ms'),'ms',v.get('p50_vs_spawn'),'F; p99',v.get('p99_vs_spawn'),'F; F',F,'load',r['host'].get('load_average_start'))
PY
done; done
