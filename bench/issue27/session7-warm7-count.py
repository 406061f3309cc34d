# Counts per warm create + first exec (and a second exec) on the server and the claimed sidecar.
# usage: count.py ROUNDS OUT
import json, os, sys, time, subprocess, glob, http.client, signal
home = os.environ['HOME']
key = [l.split("'")[1] for l in open(home + '/.boxkite/local.toml') if l.startswith('api_key')][0]
srv = int(open(home + '/.boxkite/server.pid').read().split()[0])
rounds, out = int(sys.argv[1]), sys.argv[2]
pool = glob.glob(home + '/.boxkite/server/*/pool')[0]
conn = http.client.HTTPConnection('127.0.0.1', 18571)
H = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}
def call(m, p, body=None):
    conn.request(m, p, body=json.dumps(body) if body is not None else None, headers=H)
    r = conn.getresponse(); d = r.read()
    if r.status >= 300: raise SystemExit(f'{m} {p}: {r.status} {d[:200]}')
    return json.loads(d) if d else None
call('GET', '/v1/sandboxes')
EV = 'page-faults,context-switches,raw_syscalls:sys_enter,task-clock'
def perf(pid, f):
    return subprocess.Popen(['perf', 'stat', '-x,', '-e', EV, '-p', str(pid), '-o', f], stderr=subprocess.DEVNULL)
def read(f):
    r = {}
    for l in open(f):
        p = l.strip().split(',')
        if len(p) > 3 and p[0] and p[0][0].isdigit(): r[p[2]] = float(p[0])
    return r
res = []
for i in range(rounds):
    while True:
        m = [d for d in os.listdir(pool) if d.startswith('warm-')]
        if m and os.path.exists(f'{pool}/{m[0]}/state.json'):
            try:
                st = json.load(open(f'{pool}/{m[0]}/state.json'))
                if st.get('pid'): break
            except Exception: pass
        time.sleep(0.05)
    time.sleep(3)  # the member is ready and has trimmed
    # the refill of the previous round is done: pool holds 1 ready
    pid = st['pid']
    rec = {'load': os.getloadavg()[0]}
    for phase in ('create+first', 'second'):
        ps, pc = perf(srv, '/tmp/w7/ps.txt'), perf(pid, '/tmp/w7/pc.txt')
        time.sleep(0.4)
        if phase == 'create+first':
            sb = call('POST', '/v1/sandboxes', {})
        r = call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'})
        time.sleep(0.1)
        for p in (ps, pc): p.send_signal(signal.SIGINT)
        for p in (ps, pc): p.wait()
        rec[phase] = {'server': read('/tmp/w7/ps.txt'), 'sidecar': read('/tmp/w7/pc.txt')}
        time.sleep(0.3)
    call('DELETE', f"/v1/sandboxes/{sb['id']}")
    res.append(rec)
    print(json.dumps(rec), flush=True)
json.dump(res, open(out, 'w'))
