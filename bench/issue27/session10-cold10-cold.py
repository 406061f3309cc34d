# cold.py PORT HOME N NAME: N serial cold creates, each then its first exec `true`
# (lifetime 10 min), each sandbox deleted after (untimed); prints one benchstat
# line per create: create-ms and create+first-exec ms.
import http.client, json, time, sys, re
port=int(sys.argv[1]); home=sys.argv[2]; n=int(sys.argv[3]); name=sys.argv[4]
key=re.search(r"api_key = '([^']+)'", open(home+'/.boxkite/local.toml').read()).group(1)
h={'Authorization':'Bearer '+key,'Content-Type':'application/json'}
c=http.client.HTTPConnection('127.0.0.1',port)
for i in range(n):
    time.sleep(0.3)  # the prepared pool refills
    t0=time.perf_counter()
    c.request('POST','/v1/sandboxes',json.dumps({'lifetime_minutes':10}),h); r=c.getresponse(); b=json.loads(r.read())
    t1=time.perf_counter()
    assert r.status==201, b
    sid=b['id']
    c.request('POST','/v1/sandboxes/%s/exec'%sid,json.dumps({'command':'true'}),h); r=c.getresponse(); e=json.loads(r.read())
    t2=time.perf_counter()
    assert e.get('exit_code')==0, e
    print('BenchmarkServerColdCreate/%s 1 %.0f create-us/op %.0f create+exec-us/op %.0f first-exec-us/op' % (name,(t1-t0)*1e6,(t2-t0)*1e6,(t2-t1)*1e6), flush=True)
    c.request('DELETE','/v1/sandboxes/%s'%sid,headers=h); r=c.getresponse(); r.read()
