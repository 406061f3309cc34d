# Counts per phase of a warm create and its first execs, on the server and
# on the claimed member's sidecar (its children included: perf inherits).
#
# usage: HOME=... session10-warm10-count.py PORT ROUNDS OUT [POOL]
#
# session10-warm10: session8-claim8-count.py, but each round waits for POOL
# (default 1) ready members, not one, so that a pool of 20 (bench's) is
# full and no refill runs in the create's window.
#
# Each round waits for a ready pool member, then 3 s (the member has
# trimmed its threads, as `boxkite bench` waits 1.5 s), then runs
# create, exec `true` (first), exec `true` (second), exec `true` (third).
# One `perf stat` per process and phase is started ahead, disabled, and
# enabled through its control fifo just around its request, so a window
# holds the request and nothing else of ours (the refill starts 250 ms
# after the claim, after all three).
import json, os, sys, time, subprocess, glob, http.client, tempfile

home = os.environ['HOME']
key = [l.split("'")[1] for l in open(home + '/.boxkite/local.toml') if l.startswith('api_key')][0]
srv = int(open(home + '/.boxkite/server.pid').read().split()[0])
port, rounds, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
want = int(sys.argv[4]) if len(sys.argv) > 4 else 1
pool = glob.glob(home + '/.boxkite/server/*/pool')[0]
conn = http.client.HTTPConnection('127.0.0.1', port)
H = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}


def call(m, p, body=None):
    conn.request(m, p, body=json.dumps(body) if body is not None else None, headers=H)
    r = conn.getresponse()
    d = r.read()
    if r.status >= 300:
        raise SystemExit(f'{m} {p}: {r.status} {d[:200]}')
    return json.loads(d) if d else None


EV = 'page-faults,context-switches,raw_syscalls:sys_enter,task-clock'
tmp = tempfile.mkdtemp(prefix='c8count')


class Perf:
    def __init__(self, pid, name):
        self.out = f'{tmp}/{name}.txt'
        self.ctl, self.ack = f'{tmp}/{name}.ctl', f'{tmp}/{name}.ack'
        for f in (self.ctl, self.ack):
            if os.path.exists(f):
                os.unlink(f)
            os.mkfifo(f)
        self.p = subprocess.Popen(['perf', 'stat', '-x,', '-e', EV, '-p', str(pid), '-o', self.out, '-D', '-1',
                                   '--control', f'fifo:{self.ctl},{self.ack}'], stderr=subprocess.DEVNULL)
        self.c = open(self.ctl, 'w')
        self.a = open(self.ack, 'r')

    def cmd(self, s):
        self.c.write(s + '\n')
        self.c.flush()
        self.a.readline()

    def stop(self):
        self.c.close()
        self.a.close()
        self.p.send_signal(2)
        self.p.wait()
        r = {}
        for l in open(self.out):
            p = l.strip().split(',')
            if len(p) > 3 and p[0] and p[0][0].isdigit():
                r[p[2]] = float(p[0])
        return r


call('GET', '/v1/sandboxes')
PHASES = ('create', 'first', 'second', 'third')
res = []
for i in range(rounds):
    while True:
        ready = []
        for d in os.listdir(pool):
            if not d.startswith('warm-'):
                continue
            try:
                st = json.load(open(f'{pool}/{d}/state.json'))
            except Exception:
                continue
            if st.get('pid'):
                ready.append(st)
        if len(ready) >= want:
            st = ready[0]
            break
        time.sleep(0.05)
    time.sleep(3)
    pid = st['pid']
    perfs = {(ph, w): Perf(srv if w == 'server' else pid, f'{ph}-{w}') for ph in PHASES for w in ('server', 'sidecar')}
    time.sleep(0.5)  # perf attached
    rec = {'load': os.getloadavg()[0], 'ms': {}}
    sb = None
    for ph in PHASES:
        for w in ('server', 'sidecar'):
            perfs[(ph, w)].cmd('enable')
        t0 = time.perf_counter()
        if ph == 'create':
            sb = call('POST', '/v1/sandboxes', {})
        else:
            call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'})
        rec['ms'][ph] = round((time.perf_counter() - t0) * 1e3, 2)
        for w in ('server', 'sidecar'):
            perfs[(ph, w)].cmd('disable')
    for (ph, w), p in perfs.items():
        rec.setdefault(ph, {})[w] = p.stop()
    call('DELETE', f"/v1/sandboxes/{sb['id']}")
    res.append(rec)
    print(json.dumps(rec), flush=True)
json.dump(res, open(out, 'w'))
