#!/bin/bash
# What idle sandboxes cost the host's CPU: N sandboxes created (pool off), each
# runs one exec, then after SETTLE seconds the CPU time (utime+stime ticks) and
# voluntary+involuntary context switches of every thread of every sidecar are
# summed at the start and end of WINDOW seconds.
# usage: session9-lead-idlecpu.sh BINDIR OUTDIR [N=100] [WINDOW=120] [SETTLE=20]
set -u
bin=${1:?bindir}; out=${2:?outdir}; n=${3:-100}; window=${4:-120}; settle=${5:-20}
mkdir -p "$out"; export HOME=$out/home; mkdir -p "$HOME"
bk=$bin/boxkite
BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_RATE_LIFECYCLE=-1 BOXKITE_SERVER_MAX_SANDBOXES=5000 $bk up --port ${PORT:-18800} --bastion-port $((${PORT:-18800} - 6000)) > "$out/up.txt" 2>&1 || { cat "$out/up.txt"; exit 1; }
trap '$bk down --yes > /dev/null 2>&1' EXIT
for i in $(seq 1 $((n / 10))); do $bk session create --count 10 --lifetime 2h > /dev/null || exit 1; done
for id in $($bk session ls --json id -q '.[].id'); do $bk exec -s "$id" -- true >/dev/null 2>&1 & done; wait
sleep "$settle"
server=$(pgrep -f "boxkite-server --listen 127.0.0.1:${PORT:-18800}")
sample() { # ticks ctxsw threads sidecars
	local t=0 c=0 th=0 s=0
	for p in $(ps -e -o pid=,ppid=,comm= | awk -v root="$server" '{pp[$1]=$2; c[$1]=$3} END {for (p in c) if (c[p]=="boxkite-sideca" || c[p]=="boxkite-sidecar") {q=pp[p]; while (q>1) {if (q==root) {print p; break}; q=pp[q]}}}'); do
		read -r -a st < "/proc/$p/stat" 2>/dev/null || continue
		t=$((t + st[13] + st[14]))
		for task in /proc/$p/task/*; do
			th=$((th + 1))
			while read -r k v; do case $k in voluntary_ctxt_switches:|nonvoluntary_ctxt_switches:) c=$((c + v));; esac; done < "$task/status"
		done
		s=$((s + 1))
	done
	echo "$t $c $th $s"
}
a=($(sample)); sa=$(cut -d' ' -f14,15 /proc/$server/stat); ta=$(date +%s.%N)
sleep "$window"
b=($(sample)); sb=$(cut -d' ' -f14,15 /proc/$server/stat); tb=$(date +%s.%N)
python3 - "$n" "$window" "${a[*]}" "${b[*]}" "$sa" "$sb" "$ta" "$tb" <<'PY' | tee "$out/result.txt"
import sys
n=int(sys.argv[1]); a=list(map(int,sys.argv[3].split())); b=list(map(int,sys.argv[4].split()))
sa=sum(map(int,sys.argv[5].split())); sb=sum(map(int,sys.argv[6].split())); w=float(sys.argv[8])-float(sys.argv[7])
hz=100
print(f"sidecars {a[3]}->{b[3]} threads {a[2]}->{b[2]} window {w:.1f}s")
print(f"sidecar CPU {(b[0]-a[0])*1000/hz:.0f} ms total = {(b[0]-a[0])*1000/hz/max(b[3],1)/w*1000:.2f} ms per sandbox per 1000 s")
print(f"context switches (threads alive at both ends) {b[1]-a[1]} = {(b[1]-a[1])/max(b[3],1)/w:.3f} per sandbox per s")
print(f"server CPU {(sb-sa)*1000/hz:.0f} ms")
PY
