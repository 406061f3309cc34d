# cgplacement-vm.sh: run in the VM by run.sh (FRESHVM_SCRIPT), as
#   run.sh jail.test ROUNDS N MODE... ; with cgmove (cgmove.go.txt) in FRESHVM_EXTRA.
# BenchmarkCgroupPlacement's MODEs interleaved, ROUNDS rounds of N
# placements each, and cgmove's single moves, in three kernel states of
# one boot: "default" (no hierarchy ever mounted with favordynmods),
# "favordynmods" (a named v1 hierarchy mounted with it), "after" (that
# hierarchy unmounted again). Every output line is prefixed @STATE@.
rounds=$1 n=$2
shift 2
probe() { # state
	for h in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup/memory; do
		[ -d "$h" ] || continue
		# 20 ms apart (cold27's), then back to back, then 250 ms apart:
		# a write waits only when no other came within the last grace
		# periods (rcu_sync_enter finds GP_IDLE).
		for p in 20ms 0s 250ms; do
			cgmove "$h" 40 "$p" 2>&1 | sed "s/^/@$1@ /"
		done
	done
}
bench() { # state
	i=0
	while [ "$i" -lt "$rounds" ]; do
		for m in "$@"; do
			"$BIN" -test.run '^$' -test.bench "BenchmarkCgroupPlacement/$m\$" -test.benchtime "${n}x" 2>&1 | sed "s/^/@$state@ /"
		done
		i=$((i + 1))
	done
}
state=default
probe $state
bench "$@"
probe $state
mkdir /tmp/fav
mount -t cgroup -o none,name=freshvmfav,favordynmods cgroup /tmp/fav || echo "@favordynmods@ mount failed"
echo "@favordynmods@ mounted: $(grep freshvmfav /proc/self/mountinfo)"
state=favordynmods
probe $state
bench "$@"
probe $state
umount /tmp/fav
echo "@after@ unmounted: $(grep -c freshvmfav /proc/self/cgroup) freshvmfav lines in /proc/self/cgroup"
sleep 1
state=after
probe $state
exit 0
