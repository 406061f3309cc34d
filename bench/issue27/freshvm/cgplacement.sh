#!/usr/bin/env bash
# cgplacement.sh OUTDIR [MODE...]: build sidecar/jail's test binary and
# the cgmove probe (cgmove.go.txt) statically, boot a fresh kernel (run.sh;
# FRESHVM_KERNEL picks it) and run cgplacement-vm.sh in it: 8 interleaved
# rounds x 30 placements of each MODE (default: old thread, and self if
# the benchmark has it) before and after a favordynmods mount. Writes
# OUTDIR/console.txt and OUTDIR/<state>-<mode>.txt for benchstat.
set -euo pipefail
rc=0
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=$1
shift
mkdir -p "$out"
modes=("$@")
if [[ ${#modes[@]} -eq 0 ]]; then
	modes=(old thread)
	grep -q '"self"' "$repo"/sidecar/jail/cgroup_place*_test.go && modes+=(self)
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
(cd "$repo/sidecar/jail" && CGO_ENABLED=0 go test -c -o "$build/jail.test" .)
mkdir "$build/cgmove"
cp "$here/cgmove.go.txt" "$build/cgmove/main.go"
(cd "$build/cgmove" && GO111MODULE=off CGO_ENABLED=0 go build -o "$build/cgmove.bin" main.go)
mv "$build/cgmove.bin" "$build/cgmove/cgmove"
FRESHVM_SCRIPT=$here/cgplacement-vm.sh FRESHVM_EXTRA=$build/cgmove/cgmove \
	"$here/run.sh" "$build/jail.test" "${ROUNDS:-8}" "${N:-30}" "${modes[@]}" >"$out/console.txt" || rc=$?
for state in default favordynmods; do
	for m in "${modes[@]}"; do
		sed -n "s/^@$state@ //p" "$out/console.txt" | grep -E "^(goos|goarch|pkg|cpu):|^BenchmarkCgroupPlacement/$m-" | sed "s|^BenchmarkCgroupPlacement/$m-|BenchmarkCgroupPlacement-|" >"$out/$state-$m.txt" || true
	done
done
exit "${rc:-0}"
