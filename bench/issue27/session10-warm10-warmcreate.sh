#!/bin/bash
# Interleaved runs of ./server BenchmarkWarmCreateFirstExec, base and new test
# binaries (/tmp/warm10/server-{base,new}.test), each with its own sidecar.
# usage: session10-warm10-warmcreate.sh PAIRS
set -u
cd /work/wt/warm10/server
for i in $(seq 1 ${1:-6}); do for v in base new; do
	echo "# $v $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/warm10/warmcreate-load.txt
	BOXKITE_TEST_SIDECAR=/tmp/warm10/$v/boxkite-sidecar /tmp/warm10/server-$v.test -test.run '^$' \
		-test.bench BenchmarkWarmCreateFirstExec -test.benchtime 6x >> /tmp/warm10/warmcreate-$v.txt 2>&1
done; done
echo "# end $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/warm10/warmcreate-load.txt
