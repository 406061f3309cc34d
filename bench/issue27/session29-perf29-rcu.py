#!/usr/bin/env python3
"""rcu.py FILE...: RCU grace-period waits (voluntary switches under
synchronize_rcu*/rcu_sync*) of a perf -e cs -c 1 -g script, by the
boxkite function that made the call."""
import sys, collections
exec(open('/tmp/bxk-perf29/cs.py').read().split("a = count(sys.argv[1])")[0])
for path in sys.argv[1:]:
    c = collections.Counter()
    for s in parse(path):
        kind, _ = classify(s[3])
        if kind != 'vol-rcu': continue
        fs = [f.split('boxkite/boxkite/')[-1] for f in s[3] if 'boxkite/boxkite' in f or f.startswith('main.')]
        c[' < '.join(fs[:2])] += 1
    print(path, dict(c))
