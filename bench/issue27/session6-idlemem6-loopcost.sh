#!/bin/bash
# loopcost.sh N: kernel allocations (slab and pages) made by LOOP_CTL_ADD of N loop devices and still live, by call site.
T=/sys/kernel/tracing/instances/idlemem6
H=/tmp/idlemem6/lhold; rm -f $H $H.ready $H.go
python3 /tmp/idlemem6/loopadd.py $1 $H &
while [ ! -e $H.ready ]; do sleep 0.05; done
P=$(cat $H.ready)
echo 0 > $T/tracing_on; echo > $T/trace; echo 100000 > $T/buffer_size_kb
for e in kmalloc kfree kmem_cache_alloc kmem_cache_free mm_page_alloc mm_page_free; do echo "common_pid == $P" > $T/events/kmem/$e/filter; echo 1 > $T/events/kmem/$e/enable; done
echo 0 > $T/events/kmem/mm_page_free/filter; echo 0 > $T/events/kmem/kfree/filter; echo 0 > $T/events/kmem/kmem_cache_free/filter
echo 'stacktrace' > $T/events/kmem/mm_page_alloc/trigger
echo 1 > $T/tracing_on
touch $H.go
while [ ! -e $H ]; do sleep 0.05; done
echo 0 > $T/tracing_on
cat $T/trace > /tmp/idlemem6/loop.trace
rm -f $H; wait
echo '!stacktrace' > $T/events/kmem/mm_page_alloc/trigger
for e in kmalloc kfree kmem_cache_alloc kmem_cache_free mm_page_alloc mm_page_free; do echo 0 > $T/events/kmem/$e/filter; done
echo 0 > $T/events/enable; echo 4 > $T/buffer_size_kb
python3 /tmp/idlemem6/live.py /tmp/idlemem6/loop.trace $1
