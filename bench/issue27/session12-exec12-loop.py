#!/usr/bin/env python3
# usage: loop.py BOXKITE_HOME N [pause_ms] — create a sandbox, N serial `true` execs over one keep-alive conn, delete.
import sys, json, time, http.client, re, os, statistics
home, n = sys.argv[1], int(sys.argv[2]); pause = float(sys.argv[3])/1000 if len(sys.argv) > 3 else 0
t = open(os.path.join(home, 'local.toml')).read()
import tomllib; cfg = tomllib.loads(t); url = cfg['base_url']; key = cfg['api_key']
host = url.split('//')[1]
c = http.client.HTTPConnection(host)
h = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}
def req(m, p, b=None):
    c.request(m, p, body=json.dumps(b) if b is not None else None, headers=h)
    r = c.getresponse(); d = r.read()
    if r.status // 100 != 2: raise SystemExit(f'{m} {p}: {r.status} {d[:300]}')
    return json.loads(d) if d else None
sb = req('POST', '/v1/sandboxes', {})
sid = sb['id']
req('POST', f'/v1/sandboxes/{sid}/exec', {'command': 'true'})
if os.environ.get('READY'): open(os.environ['READY'], 'w').write(sid); time.sleep(float(os.environ.get('READY_WAIT', '1')))
def counts():
    pid = os.environ.get('SERVER_PID')
    if not pid: return None
    st = open(f'/proc/{pid}/stat').read().rsplit(')',1)[1].split()
    cpu = (int(st[11]) + int(st[12])) / os.sysconf('SC_CLK_TCK')
    cs = 0
    for t in os.listdir(f'/proc/{pid}/task'):
        try:
            for l in open(f'/proc/{pid}/task/{t}/status'):
                if 'ctxt_switches' in l: cs += int(l.split()[1])
        except OSError: pass
    return cpu, cs
c0 = counts()
ts = []
for i in range(n):
    s = time.perf_counter(); req('POST', f'/v1/sandboxes/{sid}/exec', {'command': 'true'}); ts.append(time.perf_counter() - s)
    if pause: time.sleep(pause)
c1 = counts()
req('DELETE', f'/v1/sandboxes/{sid}')
ts.sort()
if c0: print(f'server cpu/exec {(c1[0]-c0[0])/n*1e6:.0f}us switches/exec {(c1[1]-c0[1])/n:.2f}', end=' ')
print(f'n={n} p50={ts[n//2]*1000:.3f}ms p10={ts[n//10]*1000:.3f} p90={ts[9*n//10]*1000:.3f} mean={statistics.mean(ts)*1000:.3f}')
