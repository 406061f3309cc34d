#!/usr/bin/env python3
"""Page faults of a jail's process (init and sidecar) until its first exec
answered, by the first package frame (BENCHMARKS.md, session 4).

  pfprof.py record TESTBIN SIDECARBIN OUT [JAILS]
      as root: perf record -c 1 -e page-faults -g of TESTBIN (server/local's
      test binary) running BenchmarkColdPhases JAILS times (10), from
      server/local; keeps OUT.data and OUT.stacks, prints the summary.
  pfprof.py sum SIDECARBIN STACKS JAILS
      the summary of stacks a record kept.

Frames are symbolised with go tool addr2line against SIDECARBIN, which
must be the sidecar the benchmark ran: `CGO_ENABLED=0 go build
./cmd/boxkite-sidecar` of the same tree builds the same binary as the
test does. TESTBIN: `go test -c -o local.test ./server/local`.
"""
import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOCAL = os.path.join(HERE, '..', '..', 'server', 'local')


def record(testbin, out, jails):
    """Runs the benchmark under perf and writes OUT.stacks: one line per
    fault of comm 4 (the jail's init, named by its fd) or boxkite-sidecar,
    its user-space return addresses innermost first."""
    with open(os.devnull, 'w') as null:
        subprocess.run(['perf', 'record', '-q', '-c', '1', '-e', 'page-faults', '-g', '-o', out + '.data',
                        os.path.abspath(testbin), '-test.run', '^$', '-test.bench', 'ColdPhases',
                        '-test.benchtime=%dx' % jails], cwd=LOCAL, stdout=null, stderr=null, check=True)
        script = subprocess.run(['perf', 'script', '-i', out + '.data', '--comms', '4,boxkite-sidecar', '-F', 'comm,ip,sym'],
                                capture_output=True, text=True, check=True).stdout
    with open(out + '.stacks', 'w') as f:
        for event in script.split('\n\n'):
            if not event.strip():
                continue
            lines = event.strip('\n').split('\n')
            ips = [l.split()[0] for l in lines[1:] if l.split() and not l.split()[0].startswith('ffffffff')]
            f.write(' '.join(ips) + '\n')
    return out + '.stacks'


def summary(sidecar, stacks_file, jails):
    stacks = [l.split() for l in open(stacks_file)]
    offs = sorted({x for s in stacks for x in s})
    addrs = ['0x%x' % (int(o, 16) + 0x400000) for o in offs]
    out = subprocess.run(['go', 'tool', 'addr2line', sidecar], input='\n'.join(addrs) + '\n',
                         capture_output=True, text=True).stdout.split('\n')
    sym = {o: out[2 * i] for i, o in enumerate(offs)}
    c = collections.Counter()
    for s in stacks:
        key = 'runtime (stacks, threads, heap; no package frame)'
        for f in (sym.get(x, '?') for x in s):
            if f.startswith('github.com/boxkite') or ('.init' in f and not f.startswith('runtime.')):
                key = f
                break
            if f in ('runtime.schedinit', 'runtime.mallocinit', 'runtime.rt0_go', 'runtime.newm', 'runtime.gcenable'):
                key = f
                break
            if f == 'runtime.(*p).destroy':
                key = 'runtime.procresize (GOMAXPROCS set at run time)'
                break
            if f.startswith('regexp.'):
                key = 'regexp compile'
                break
        c[key] += 1
    print("# page faults of one jail's process (init and sidecar) until its first exec answered,")
    print("# mean of %d jails (perf record -c 1 -e page-faults -g on BenchmarkColdPhases -test.benchtime=%dx; "
          "comm 4 and boxkite-sidecar, so the first exec's fork child before its exec is included), by the first package frame" % (jails, jails))
    print('%7.1f total' % (len(stacks) / jails))
    for k, v in c.most_common(40):
        print('%7.1f %s' % (v / jails, k))


def main(argv):
    if len(argv) in (5, 6) and argv[1] == 'record':
        jails = int(argv[5]) if len(argv) == 6 else 10
        summary(argv[3], record(argv[2], argv[4], jails), jails)
    elif len(argv) == 5 and argv[1] == 'sum':
        summary(argv[2], argv[3], int(argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
