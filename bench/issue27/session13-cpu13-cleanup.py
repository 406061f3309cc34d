#!/usr/bin/env python3
# delete the sandboxes of a burst.py result, at concurrency 20
import json, sys, os, threading, http.client, tomllib
home, res = sys.argv[1], json.load(open(sys.argv[2]))
cfg = tomllib.load(open(os.path.join(home, 'local.toml'), 'rb'))
host, port = cfg['base_url'].split('//')[1].split(':')
ids = list(res['ids']); lock = threading.Lock()
def w():
    c = http.client.HTTPConnection(host, int(port), timeout=300)
    while True:
        with lock:
            if not ids: return
            i = ids.pop()
        c.request('DELETE', '/v1/sandboxes/' + i, headers={'Authorization': 'Bearer ' + cfg['api_key']}); c.getresponse().read()
ts = [threading.Thread(target=w) for _ in range(20)]
[t.start() for t in ts]; [t.join() for t in ts]
