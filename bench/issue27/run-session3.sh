#!/bin/bash
# Issue 27's acceptance runs of `boxkite bench`, on a quiet machine, against
# the binaries of /work/main at the time of the run (CGO_ENABLED=0, as released).
# usage: bench27.sh OUTDIR [idleN]
set -u
out=${1:?outdir}; idle=${2:-2000}
mkdir -p "$out/bin"
(cd /work/main && git rev-parse --short HEAD > "$out/commit" && CGO_ENABLED=0 go build -trimpath -o "$out/bin/" ./cmd/boxkite ./cmd/boxkite-server ./cmd/boxkite-sidecar ./cmd/boxkite-bastion) || exit 1
export HOME=$out/home; mkdir -p "$HOME"
bk=$out/bin/boxkite
run() { # name, env..., -- bench args
	name=$1; shift
	envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	echo "== $name $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
	env "${envs[@]}" $bk up --port 18500 --bastion-port 12500 > "$out/$name.up" 2>&1 || { cat "$out/$name.up"; return; }
	$bk bench "$@" --json > "$out/$name.json" 2> "$out/$name.err"
	$bk bench --help >/dev/null
	$bk down --yes > /dev/null 2>&1
	python3 - "$out/$name.json" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
def l(k,x=None):
    v=r.get(k) if x is None else (r.get(k) or {}).get(x)
    if not v: return '-'
    s=f"p50 {v['p50_ms']}ms ({v.get('p50_vs_spawn')}F, {v.get('p50_vs_bwrap')}B) p95 {v['p95_ms']}ms ({v.get('p95_vs_spawn')}F, {v.get('p95_vs_bwrap')}B) p99 {v.get('p99_vs_spawn')}F"
    ph=v.get('vs_phase_floors')
    if ph: s+=f" | in phase {ph.get('phase')}: p50 {ph.get('p50_vs_spawn')}F {ph.get('p50_vs_spawn_ci95')} {ph.get('p50_vs_bwrap')}B {ph.get('p50_vs_bwrap_ci95')}, p99 {ph.get('p99_vs_spawn')}F"
    return s
print(' F', r['floors']['spawn']['p50_ms'], 'B', (r['floors']['bwrap'] or {}).get('p50_ms'), 'load', r['host'].get('load_average_start'), r['host'].get('load_average_end'))
for k in ['create_to_first_exec','burst_create','burst_create_to_first_exec','exec','file_write_read_4kib']:
    print(' ',k,l(k))
if r.get('idle'): print('  idle', json.dumps(r['idle'])[:900])
if r.get('snapshots'): print('  snapshots', json.dumps({k:(v if not isinstance(v,dict) else {kk:v.get(kk) for kk in ('p50_ms','p50_vs_bwrap')}) for k,v in r['snapshots'].items()})[:900])
print('  failures', len(r.get('failures') or []), (r.get('failures') or [])[:3])
PY
}
run cold BOXKITE_SERVER_WARM_POOL=0 -- --sandboxes 20 --execs 30 --concurrency 10
run warm BOXKITE_SERVER_WARM_POOL=40 -- --sandboxes 20 --execs 30 --concurrency 10
run c100 BOXKITE_SERVER_WARM_POOL=0 -- --sandboxes 1 --execs 2 --concurrency 100
run snap -- --sandboxes 5 --execs 10 --concurrency 5 --snapshots 5
[ "$idle" -gt 0 ] && run idle BOXKITE_SERVER_WARM_POOL=0 BOXKITE_SERVER_RATE_LIFECYCLE=-1 -- --sandboxes 2 --execs 5 --concurrency 8 --idle "$idle"
echo "== done $(date +%T)"
