# usage: HOME=... serial.py PORT N [POOL] : wait for POOL ready members + 1.5 s, then N serial
# (create, exec true) pairs like `boxkite bench`; prints each pair's ms.
import json, os, sys, time, glob, http.client
home = os.environ['BOXKITE_HOME']
key = [l.split("'")[1] for l in open(home + '/local.toml') if l.startswith('api_key')][0]
port, n = int(sys.argv[1]), int(sys.argv[2])
want = int(sys.argv[3]) if len(sys.argv) > 3 else 20
conn = http.client.HTTPConnection('127.0.0.1', port)
H = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}
def call(m, p, body=None):
    conn.request(m, p, body=json.dumps(body) if body is not None else None, headers=H)
    r = conn.getresponse(); d = r.read()
    if r.status >= 300: raise SystemExit(f'{m} {p}: {r.status} {d[:200]}')
    return json.loads(d) if d else None
call('GET', '/v1/sandboxes')
def ready():
    k = 0
    pool = (glob.glob(home + '/server/cow/pool') + glob.glob(home + '/server/pool') + [None])[0]
    if pool is None: return 0
    for d in os.listdir(pool):
        try:
            if d.startswith('warm-') and json.load(open(f'{pool}/{d}/state.json')).get('pid'): k += 1
        except Exception: pass
    return k
while ready() < want: time.sleep(0.05)
time.sleep(float(os.environ.get('SETTLE', '1.5')))
if os.environ.get('MARK'): open(os.environ['MARK'], 'w').write('go\n')
time.sleep(float(os.environ.get('MARKWAIT', '0')))
ids = []
for i in range(n):
    t0 = time.perf_counter(); sb = call('POST', '/v1/sandboxes', {'lifetime_minutes': 10}); t1 = time.perf_counter()
    call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'}); t2 = time.perf_counter()
    ids.append(sb['id'])
    more = []
    for j in range(int(os.environ.get('EXECS', '1')) - 1):
        t3 = time.perf_counter(); call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'}); more.append(f'{1e3*(time.perf_counter()-t3):.2f}')
    print(f'create {1e3*(t1-t0):.2f} first {1e3*(t2-t1):.2f} total {1e3*(t2-t0):.2f} more', ' '.join(more), flush=True)
for i in ids: call('DELETE', f'/v1/sandboxes/{i}')
