#!/bin/bash
# usage: trace.sh TESTBIN N OUT — ftrace kmem events while N sandboxes are created, held idle.
set -e
T=/sys/kernel/tracing/instances/idlemem6
mkdir -p $T
echo 0 > $T/tracing_on
echo 200000 > $T/buffer_size_kb
echo > $T/trace
for e in kmalloc kfree kmem_cache_alloc kmem_cache_free; do echo 1 > $T/events/kmem/$e/enable; done
echo 'migratetype == 0' > $T/events/kmem/mm_page_alloc/filter
echo 1 > $T/events/kmem/mm_page_alloc/enable
echo 'stacktrace' > $T/events/kmem/mm_page_alloc/trigger
echo 1 > $T/events/kmem/mm_page_free/enable
HOLD=/tmp/idlemem6/hold
rm -f $HOLD
cd /work/wt/idlemem6/server/local
BOXKITE_DENSITY_HOLD=$HOLD $1 -test.run '^$' -test.bench IdleDensity -test.benchtime=${2}x -test.v > $3.bench 2>&1 &
BP=$!
# start tracing after the N=1 round: wait for the first sandbox dir? simply start now
echo 1 > $T/tracing_on
while [ ! -e $HOLD ]; do sleep 0.2; done
echo 0 > $T/tracing_on
cat $T/per_cpu/cpu*/stats | grep -E "overrun|entries" > $3.stats
cat $T/trace > $3
rm -f $HOLD
wait $BP
echo '!stacktrace' > $T/events/kmem/mm_page_alloc/trigger
echo 0 > $T/events/enable
echo 4 > $T/buffer_size_kb
