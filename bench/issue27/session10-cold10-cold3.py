# cold3.py PORT HOME N NAME: as cold.py, and the first exec's own counts in the
# jail's process (its init + sidecar): minflt and schedstat run time of its
# threads, read between the create's answer and the exec, and after the exec.
import http.client, json, time, sys, re, os
port=int(sys.argv[1]); home=sys.argv[2]; n=int(sys.argv[3]); name=sys.argv[4]
key=re.search(r"api_key = '([^']+)'", open(home+'/.boxkite/local.toml').read()).group(1)
h={'Authorization':'Bearer '+key,'Content-Type':'application/json'}
c=http.client.HTTPConnection('127.0.0.1',port)
sbdir=home+'/.boxkite/server/cow/sandboxes'
def counts(pid):
    f=open('/proc/%d/stat'%pid).read().rsplit(')',1)[1].split()
    flt=int(f[7])  # minflt (field 10)
    rt=0
    for t in os.listdir('/proc/%d/task'%pid):
        rt+=int(open('/proc/%d/task/%s/schedstat'%(pid,t)).read().split()[0])
    return flt, rt
for i in range(n):
    time.sleep(0.3)  # the prepared pool refills
    t0=time.perf_counter()
    c.request('POST','/v1/sandboxes',json.dumps({'lifetime_minutes':10}),h); r=c.getresponse(); b=json.loads(r.read())
    t1=time.perf_counter()
    assert r.status==201, b
    sid=b['id']
    pid=json.load(open('%s/%s/state.json'%(sbdir,sid)))['pid']
    f0,r0=counts(pid)
    t2=time.perf_counter()
    c.request('POST','/v1/sandboxes/%s/exec'%sid,json.dumps({'command':'true'}),h); r=c.getresponse(); e=json.loads(r.read())
    t3=time.perf_counter()
    f1,r1=counts(pid)
    assert e.get('exit_code')==0, e
    print('BenchmarkServerColdCreate/%s 1 %.0f create-us/op %.0f exec-us/op %d faults-first-exec/op %.0f cpu-us-first-exec/op' % (name,(t1-t0)*1e6,(t3-t2)*1e6,f1-f0,(r1-r0)/1e3), flush=True)
    c.request('DELETE','/v1/sandboxes/%s'%sid,headers=h); r=c.getresponse(); r.read()
