#!/usr/bin/env python3
# inclusive top functions of the samples of PID (or 'jail') containing function A
import sys, collections
sys.argv, ARGS = sys.argv[:3], sys.argv[3:]
src = open('session13-cpu13-perfsplit.py').read()
exec(src.split("spawner = None")[0])
who, A, top = ARGS[0], ARGS[1], int(ARGS[2]) if len(ARGS) > 2 else 50
if who == 'jail': ss = [s for s in samples if s[0] != spid and anc(s[0])]
else: ss = [s for s in samples if s[0] == int(who)]
sub = [s for s in ss if A == '' or any(A in f[0] for f in s[3])]
print(len(ss), 'with', A, len(sub))
inc = collections.Counter()
for s in sub:
    for f in set(f[0] for f in s[3]): inc[f] += 1
for f, n in inc.most_common(top): print(f'{n:6d} {100*n/max(1,len(sub)):5.1f}%  {f[:120]}')
