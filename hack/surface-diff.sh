#!/usr/bin/env bash
# Checks that this checkout serves the same surface as revision REV
# (default main): /openapi.json byte for byte, and `boxkite CMD --help` for
# every command and subcommand. For moves that must not change behaviour
# (issue 20's split). Builds both trees, starts each boxkite-server once
# on a free loopback port with a throwaway state directory, and prints the
# differences; exits 1 when there are any.
set -euo pipefail
rev=${1:-main}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cleanup() {
	git -C "$here" worktree remove --force "$work/base-tree" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
git -C "$here" worktree add --detach --quiet "$work/base-tree" "$rev"

# surface TREE OUT: OUT/openapi.json and OUT/help/<command path>.txt.
surface() {
	local tree=$1 out=$2
	mkdir -p "$out/help" "$out/state" "$out/home"
	(cd "$tree" && for b in boxkite boxkite-server boxkite-sidecar; do go build -o "$out/$b" "./cmd/$b"; done)
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	HOME=$out/home "$out/boxkite-server" -listen "127.0.0.1:$port" -state-dir "$out/state" >"$out/server.log" 2>&1 &
	local pid=$!
	for _ in $(seq 150); do
		curl -fsS "http://127.0.0.1:$port/openapi.json" -o "$out/openapi.json" 2>/dev/null && break
		sleep 0.2
	done
	kill "$pid" && wait "$pid" 2>/dev/null || true
	[ -s "$out/openapi.json" ] || { echo "no /openapi.json from $tree; see $out/server.log" >&2; cat "$out/server.log" >&2; exit 2; }
	walk "$out"
}

# walk OUT CMD...: the help of CMD, then of each subcommand it lists.
walk() {
	local out=$1
	shift
	local name=ROOT
	[ $# -eq 0 ] || name=$(IFS=_; echo "$*")
	HOME=$out/home BOXKITE_HOME=$out/home/.boxkite "$out/boxkite" "$@" --help >"$out/help/$name.txt" 2>&1 || true
	grep -q '\[command\]' "$out/help/$name.txt" || return 0
	local sub
	for sub in $(HOME=$out/home "$out/boxkite" __complete "$@" "" 2>/dev/null | grep -v '^:' | cut -f1); do
		walk "$out" "$@" "$sub"
	done
}

surface "$work/base-tree" "$work/base"
surface "$here" "$work/this"
status=0
cmp "$work/base/openapi.json" "$work/this/openapi.json" || status=1
diff -r "$work/base/help" "$work/this/help" || status=1
echo "$(ls "$work/this/help" | wc -l) help pages and /openapi.json ($(wc -c <"$work/this/openapi.json") bytes) compared with $rev: $([ $status = 0 ] && echo identical || echo DIFFERENT)"
exit $status
