import json, os, sys, time, subprocess, glob, http.client
home = os.environ['HOME']
key = [l.split("'")[1] for l in open(home + '/.boxkite/local.toml') if l.startswith('api_key')][0]
port, out = int(sys.argv[1]), sys.argv[2]
pool = glob.glob(home + '/.boxkite/server/*/pool')[0]
conn = http.client.HTTPConnection('127.0.0.1', port)
H = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}
def call(m, p, body=None):
    conn.request(m, p, body=json.dumps(body) if body is not None else None, headers=H)
    r = conn.getresponse(); d = r.read()
    if r.status >= 300: raise SystemExit(f'{m} {p}: {r.status} {d[:200]}')
    return json.loads(d) if d else None
call('GET', '/v1/sandboxes')
while True:
    st = None
    for d in [d for d in os.listdir(pool) if d.startswith('warm-')]:
        try:
            st = json.load(open(f'{pool}/{d}/state.json'))
            if st.get('pid'): break
        except Exception: st = None
    if st and st.get('pid'): break
    time.sleep(0.05)
time.sleep(3)
p = subprocess.Popen(['strace', '-f', '-tt', '-p', str(st['pid']), '-o', out])
time.sleep(1.5)
marks = []
marks.append(('create', time.time())); sb = call('POST', '/v1/sandboxes', {})
time.sleep(0.3)
marks.append(('first', time.time())); call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'})
time.sleep(0.3)
marks.append(('second', time.time())); call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'})
time.sleep(0.3)
marks.append(('end', time.time()))
p.send_signal(2); p.wait()
call('DELETE', f"/v1/sandboxes/{sb['id']}")
json.dump(marks, open(out + '.marks', 'w'))
