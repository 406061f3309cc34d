# mw.py: Mann-Whitney U (normal approximation, ties averaged) of the server's create durations pooled over runs,
# and a paired sign count of the per-run medians
import math, statistics as st, sys
sys.argv = ['x']; exec(open('/tmp/warm12/logsum.py').read().split('allv = {}')[0])
b = [x for r in runs('base') for x in r]; n = [x for r in runs('new') for x in r]
allx = sorted([(x, 0) for x in b] + [(x, 1) for x in n])
ranks = [0.0] * len(allx); i = 0
while i < len(allx):
    j = i
    while j + 1 < len(allx) and allx[j + 1][0] == allx[i][0]: j += 1
    for k in range(i, j + 1): ranks[k] = (i + j) / 2 + 1
    i = j + 1
rb = sum(r for r, (x, g) in zip(ranks, allx) if g == 0)
n1, n2 = len(b), len(n)
u = rb - n1 * (n1 + 1) / 2
mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
z = (u - mu) / sd
p = math.erfc(abs(z) / math.sqrt(2))
print(f'pooled server create durations: base n={n1} median {st.median(b):.2f} ms, new n={n2} median {st.median(n):.2f} ms')
print(f'Mann-Whitney U={u:.0f} z={z:.2f} two-sided p={p:.4f} (P(base > new) = {u/(n1*n2):.3f})')
rb_, rn_ = runs('base'), runs('new')
wins = sum(st.median(x) > st.median(y) for x, y in zip(rb_, rn_))
print(f'pairs where the new run median is lower: {wins} of {min(len(rb_), len(rn_))}')
