#!/bin/bash
# usage: pstat.sh OUT ROUNDS BENCHREGEX N1 N2 VARIANT... : per-op context switches, task-clock, page faults from (N2 run - N1 run), TMPDIR as given
OUT=$1; R=$2; B=$3; N1=$4; N2=$5; shift 5
cd /work/wt/audit11/server/sqlstore
one() { perf stat -e context-switches,task-clock,page-faults -x, -o /tmp/audit11/.ps.$$ /tmp/audit11/$1-sqlstore.test -test.run '^$' -test.bench "$B" -test.benchtime ${2}x > /dev/null 2>&1; awk -F, '/context-switches/{c=$1} /task-clock/{t=$1} /page-faults/{p=$1} END{print c, t, p}' /tmp/audit11/.ps.$$; }
for i in $(seq $R); do
  for v in "$@"; do
    read c1 t1 p1 < <(one $v $N1); read c2 t2 p2 < <(one $v $N2)
    awk -v v=$v -v n=$((N2-N1)) -v c=$((c2-c1)) -v t1=$t1 -v t2=$t2 -v p=$((p2-p1)) -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN{printf "%s cs/op %.2f cpu-us/op %.1f faults/op %.3f load %s\n", v, c/n, (t2-t1)*1000/n, p/n, l}' | tee -a $OUT
  done
done
