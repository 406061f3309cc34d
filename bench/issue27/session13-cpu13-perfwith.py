#!/usr/bin/env python3
# count server samples containing function A, and among them those containing B (each B given)
import sys, re, collections
sys.argv, ARGS = sys.argv[:3], sys.argv[3:]
exec(open('session13-cpu13-perfsplit.py').read().split("def anc(p)")[0])
ss = [s for s in samples if s[0] == spid]
A = ARGS[0]
withA = [s for s in ss if any(A in f[0] for f in s[3])]
print(f'server {len(ss)}, with {A}: {len(withA)}')
for B in ARGS[1:]:
    n = sum(1 for s in withA if any(B in f[0] for f in s[3]))
    print(f'  {B}: {n}')
