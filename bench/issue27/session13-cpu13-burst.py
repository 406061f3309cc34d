#!/usr/bin/env python3
"""N creates (+ one exec 'true' each) at concurrency C against a boxkite server,
with CPU accounting around the create phase: the server process (utime/stime),
its descendants (spawner, jails) by /proc walk at the end of the phase and by the
sandbox cgroups' cpuacct, kernel threads by name, and /proc/stat host totals.
usage: burst.py HOME N C OUTJSON [--no-exec]"""
import json, os, sys, time, threading, http.client, re, glob, tomllib

home, N, C, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
do_exec = '--no-exec' not in sys.argv
cfg = tomllib.load(open(os.path.join(home, 'local.toml'), 'rb'))
url, key = cfg['base_url'], cfg['api_key']
host, port = url.split('//')[1].split(':'); port = int(port)
spid = int(open(os.path.join(home, 'server.pid')).read().split()[0])
HZ = os.sysconf('SC_CLK_TCK')

def pstat(pid):
    try:
        s = open(f'/proc/{pid}/stat').read()
    except OSError:
        return None
    rp = s.rindex(')'); comm = s[s.index('(')+1:rp]; f = s[rp+2:].split()
    # fields after comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14) ... minflt(7) majflt(9)
    return dict(comm=comm, ppid=int(f[1]), ut=int(f[11]), st=int(f[12]), cut=int(f[13]), cst=int(f[14]), minflt=int(f[7]))

def procstat():
    l = open('/proc/stat').readline().split()[1:]
    return [int(x) for x in l]  # user nice system idle iowait irq softirq steal

def kthreads():
    d = {}
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        s = pstat(p)
        if not s or s['ppid'] != 2: continue
        name = re.sub(r'[0-9:/.\-]+.*$', '', s['comm']) or s['comm']
        if s['comm'].startswith('jbd2/loop'): name = 'jbd2/loop'
        elif s['comm'].startswith('loop'): name = 'loopN'
        elif s['comm'].startswith('kworker'): name = 'kworker'
        d[p] = (name, s['ut'] + s['st'])
    return d

def status(pid):
    r = {}
    try:
        for l in open(f'/proc/{pid}/status'):
            if l.startswith(('voluntary_ctxt', 'nonvoluntary_ctxt')):
                k, v = l.split(':'); r[k] = int(v)
    except OSError: pass
    return r

def server_threads_ctx(pid):
    v = nv = 0
    for t in os.listdir(f'/proc/{pid}/task'):
        s = status(f'{pid}/task/{t}')
        v += s.get('voluntary_ctxt_switches', 0); nv += s.get('nonvoluntary_ctxt_switches', 0)
    return v, nv

def req(conn, method, path, body=None):
    h = {'Authorization': 'Bearer ' + key}
    if body is not None:
        body = json.dumps(body); h['Content-Type'] = 'application/json'
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse(); data = r.read()
    return r.status, data

ids, lat, fails = [None]*N, [None]*N, []
nxt = [0]; lock = threading.Lock(); gate = threading.Event()
def worker():
    conn = http.client.HTTPConnection(host, port, timeout=300)
    gate.wait()
    while True:
        with lock:
            i = nxt[0]; nxt[0] += 1
        if i >= N: return
        t0 = time.perf_counter()
        st, data = req(conn, 'POST', '/v1/sandboxes', {})
        if st not in (200, 201):
            fails.append((st, data[:200].decode(errors='replace'))); continue
        sid = json.loads(data)['id']; ids[i] = sid
        t1 = time.perf_counter()
        if do_exec:
            st, data = req(conn, 'POST', f'/v1/sandboxes/{sid}/exec', {'command': 'true'})
            if st != 200: fails.append((st, data[:200].decode(errors='replace')))
        lat[i] = ((t1-t0)*1000, (time.perf_counter()-t0)*1000)

ths = [threading.Thread(target=worker) for _ in range(C)]
for t in ths: t.start()
time.sleep(0.3)
load0 = open('/proc/loadavg').read().split()[:3]
s0, k0, ps0 = pstat(spid), kthreads(), procstat()
cv0 = server_threads_ctx(spid)
w0 = time.perf_counter()
gate.set()
for t in ths: t.join()
wall = time.perf_counter() - w0
s1, k1, ps1 = pstat(spid), kthreads(), procstat()
cv1 = server_threads_ctx(spid)
load1 = open('/proc/loadavg').read().split()[:3]
# jails: cgroups named <id>.<tag> under cpuacct
jail = [0, 0]; ncg = 0
for sid in ids:
    if not sid: continue
    for sf in glob.glob(os.path.join(home, 'server', '*', 'sandboxes', sid, 'state.json')):
        for d in json.load(open(sf))['cgroup']['dirs']:
            if '/unified/' in d:
                st = dict(l.split() for l in open(os.path.join(d, 'cpu.stat')) if l.startswith(('user_usec', 'system_usec')))
                jail[0] += int(st['user_usec']); jail[1] += int(st['system_usec']); ncg += 1
# descendants of the server still alive (the spawner, jails) with their total CPU
desc = {}
allp = {}
for p in os.listdir('/proc'):
    if p.isdigit():
        s = pstat(p)
        if s: allp[int(p)] = s
def isdesc(p):
    seen = 0
    while p in allp and seen < 50:
        if allp[p]['ppid'] == spid: return True
        p = allp[p]['ppid']; seen += 1
    return False
for p, s in allp.items():
    if isdesc(p):
        desc.setdefault(s['comm'], [0, 0]); desc[s['comm']][0] += s['ut'] + s['st']; desc[s['comm']][1] += 1
kd = {}
for p, (name, t) in k1.items():
    kd[name] = kd.get(name, 0) + t - (k0.get(p, (name, 0))[1])
ms = lambda ticks: ticks * 1000.0 / HZ
names = ['user','nice','system','idle','iowait','irq','softirq','steal']
host = {n: ms(ps1[i]-ps0[i]) for i, n in enumerate(names)}
good = sorted(l for l in lat if l)
def pct(a, q): return a[min(len(a)-1, int(q*len(a)))] if a else None
res = dict(N=N, C=C, wall_s=wall, load_start=load0, load_end=load1, fails=len(fails), fail_samples=fails[:3],
    create_ms=dict(p50=pct(sorted(x[0] for x in good), .5), p95=pct(sorted(x[0] for x in good), .95)),
    first_exec_ms=dict(p50=pct(sorted(x[1] for x in good), .5), p95=pct(sorted(x[1] for x in good), .95)),
    server_ms=dict(user=ms(s1['ut']-s0['ut']), sys=ms(s1['st']-s0['st']), child_user=ms(s1['cut']-s0['cut']), child_sys=ms(s1['cst']-s0['cst']), minflt=s1['minflt']-s0['minflt']),
    server_ctx=dict(vol=cv1[0]-cv0[0], invol=cv1[1]-cv0[1]),
    jail_cgroup_ms=dict(user=jail[0]/1e3, sys=jail[1]/1e3), jail_cgroups=ncg,
    descendants_ms={k: [ms(v[0]), v[1]] for k, v in desc.items()},
    kthreads_ms={k: round(ms(v),1) for k, v in sorted(kd.items(), key=lambda x: -x[1]) if v},
    host_ms=host, ids=[i for i in ids if i])
json.dump(res, open(out, 'w'), indent=1)
r = dict(res); r.pop('ids')
print(json.dumps(r, indent=None)[:3000])
