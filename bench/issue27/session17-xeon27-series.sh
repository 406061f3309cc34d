#!/bin/bash
# 8 rounds, each: F and B (perf stat task-clock over 100 spawns, and wall),
# the sidecar's exec, the control plane's exec and 4 KiB files round trip
# (fake sidecar), the audit append, the sidecar's 4 KiB upload/view.
out=/tmp/xeon27/series
mkdir -p $out
W=/work/wt/xeon27
for r in 1 2 3 4 5 6 7 8; do
  echo "round $r $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/load.txt
  for cmd in "bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true" "/bin/true"; do
    perf stat -x, -e task-clock -o $out/perf.tmp -- /tmp/xeon27/cpuof.sh 100 $cmd >/dev/null 2>&1
    echo "$r ${cmd%% *} $(grep task-clock $out/perf.tmp | cut -d, -f1) ms/100" >> $out/spawn-cpu.txt
  done
  (cd $W/server/local && /tmp/xeon27/local.test -test.run '^$' -test.bench 'SidecarExec/(spawn|sidecar)$' -test.benchtime 300x) | grep ^Bench >> $out/sidecar-exec.txt
  (cd $W/server && /tmp/xeon27/server.test -test.run '^$' -test.bench 'ExecProxy$|FilesProxy$' -test.benchtime 1000x -test.benchmem) | grep ^Bench >> $out/proxy.txt
  (cd $W/server/sqlstore && /tmp/xeon27/sql.test -test.run '^$' -test.bench 'AppendExecLog$|AppendExecLogPaced$' -test.benchtime 300x -test.benchmem) | grep ^Bench >> $out/audit.txt
  (cd $W/sidecar && /tmp/xeon27/sidecar.test -test.run '^$' -test.bench '^Benchmark(Upload|View)$' -test.benchtime 100x -test.benchmem) | grep ^Bench >> $out/files.txt
  (cd $W/server/local && /tmp/xeon27/local.test -test.run '^$' -test.bench 'ColdPhases/heap=0MiB/spawner=true' -test.benchtime 10x) | grep ^Bench >> $out/phases.txt
done
echo done >> $out/load.txt
