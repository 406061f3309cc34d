# cold2.py PORT HOME N: N serial creates, each then its first exec; prints per-create ms, then deletes
import http.client, json, time, sys, re
port=int(sys.argv[1]); home=sys.argv[2]; n=int(sys.argv[3])
key=re.search(r"api_key = '([^']+)'", open(home+'/.boxkite/local.toml').read()).group(1)
h={'Authorization':'Bearer '+key,'Content-Type':'application/json'}
c=http.client.HTTPConnection('127.0.0.1',port)
ids=[]; tot=[]; cr=[]
for i in range(n):
    time.sleep(0.3)  # the prepared pool refills
    t0=time.time()
    c.request('POST','/v1/sandboxes',json.dumps({'lifetime_minutes':10}),h); r=c.getresponse(); b=json.loads(r.read())
    t1=time.time()
    sid=b['id']; ids.append(sid)
    c.request('POST','/v1/sandboxes/%s/exec'%sid,json.dumps({'command':'true'}),h); r=c.getresponse(); e=json.loads(r.read())
    t2=time.time()
    assert e.get('exit_code')==0, e
    cr.append((t1-t0)*1e3); tot.append((t2-t0)*1e3)
print('create-ms', ' '.join('%.1f'%x for x in cr)); print('first-exec-ms', ' '.join('%.1f'%x for x in tot), flush=True)
return_ids=ids
open('/tmp/c9/ids-%d'%port,'w').write('\n'.join(ids))
