# Does a claim (or the first exec) leave the claimed member's disk dirty? syncfs + loop writes around each step.
import json, os, sys, time, glob, http.client, ctypes
libc = ctypes.CDLL(None)
home = os.environ['HOME']
key = [l.split("'")[1] for l in open(home + '/.boxkite/local.toml') if l.startswith('api_key')][0]
conn = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]))
H = {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}
def call(m, p, body=None):
    conn.request(m, p, body=json.dumps(body) if body is not None else None, headers=H)
    r = conn.getresponse(); d = r.read()
    return json.loads(d) if d else None
def mounts():
    return {l.split()[1]: l.split()[0] for l in open('/proc/mounts') if '/warm11/home-base/' in l and l.split()[1].endswith('/disk')}
def sync(mp, dev):
    fd = os.open(mp, os.O_RDONLY | os.O_DIRECTORY)
    w0 = int(open(f'/sys/block/{dev}/stat').read().split()[4]); t = time.perf_counter(); libc.syncfs(fd)
    dt = (time.perf_counter() - t) * 1e3; os.close(fd)
    return f'{dt:.2f}ms/{int(open(f"/sys/block/{dev}/stat").read().split()[4]) - w0}io'
time.sleep(3)
for rnd in range(int(sys.argv[2])):
    m = mounts()
    for mp, dev in m.items():
        if '/pool/warm-' in mp: sync(mp, os.path.basename(dev))  # clean every member
    time.sleep(2)
    before = {mp: dev for mp, dev in mounts().items() if '/pool/warm-' in mp}
    pre = {mp: sync(mp, os.path.basename(dev)) for mp, dev in before.items()}
    sb = call('POST', '/v1/sandboxes', {})
    mp = [p for p, d in mounts().items() if sb['id'] in p][0]; dev = os.path.basename(mounts()[mp])
    after_claim = sync(mp, dev)
    call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'})
    after_exec = sync(mp, dev)
    call('POST', f"/v1/sandboxes/{sb['id']}/exec", {'command': 'true'})
    after_exec2 = sync(mp, dev)
    print('members 2s after clean:', ' '.join(pre.values()), '| claimed: after claim', after_claim, 'after exec1', after_exec, 'after exec2', after_exec2, flush=True)
    call('DELETE', f"/v1/sandboxes/{sb['id']}")
    time.sleep(3)
