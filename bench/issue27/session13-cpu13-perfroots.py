#!/usr/bin/env python3
# server samples by the goroutine's start function (the frame under goexit) or thread root
import sys, collections
sys.argv, ARGS = sys.argv[:3], sys.argv[3:]
src = open('session13-cpu13-perfsplit.py').read()
exec(src.split("spawner = None")[0])
ss = [s for s in samples if s[0] == spid]
c = collections.Counter(); k = collections.Counter()
for s in ss:
    fr = [f[0] for f in s[3]]
    root = fr[-1] if fr else '?'
    if 'runtime.goexit.abi0' in fr:
        i = fr.index('runtime.goexit.abi0'); root = fr[i-1] if i > 0 else root
        # for http conns, the handler pattern
        for f in fr:
            if 'Service).' in f or 'proxy' in f.lower() and 'boxkite' in f:
                root += ' > ' + f.split('/')[-1]; break
    c[root] += 1
    if s[3] and 'kernel' in s[3][0][1]: k[root] += 1
for r, n in c.most_common(int(ARGS[0]) if ARGS else 40): print(f'{n:5d} {100*n/len(ss):5.1f}%  kernel {k[r]:4d}  {r[:150]}')
