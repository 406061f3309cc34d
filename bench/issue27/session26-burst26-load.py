#!/usr/bin/env python3
# N creates, C at once, then deletes; /proc CPU of server, spawner helper, jails.
import json, os, sys, time, urllib.request, concurrent.futures as cf
N=int(sys.argv[1]); C=int(sys.argv[2]); base=sys.argv[3]; key=sys.argv[4]
TCK=os.sysconf('SC_CLK_TCK')
def req(m, path, body=None):
    r=urllib.request.Request(base+path, method=m, data=(json.dumps(body).encode() if body is not None else None),
        headers={'Authorization':'Bearer '+key,'content-type':'application/json'})
    with urllib.request.urlopen(r, timeout=120) as f: return f.read()
def stat(pid):
    s=open(f'/proc/{pid}/stat').read(); f=s[s.rindex(')')+2:].split()
    return [int(x) for x in f[11:15]]+[int(f[7]),int(f[9])]  # ut st cut cst minflt majflt
def kids(pid):
    out=[]
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            s=open(f'/proc/{p}/stat').read()
            if int(s[s.rindex(')')+2:].split()[1])==pid: out.append((int(p), s[s.index('(')+1:s.rindex(')')]))
        except Exception: pass
    return out
srv=int(open(os.path.expanduser('~/.boxkite/server.pid')).read())
sp=[p for p,c in kids(srv) if b'spawner' in open(f'/proc/{p}/cmdline','rb').read()]
print('server',srv,'kids',kids(srv))
sp=sp[0] if sp else None
def rt(pid):
    t=0
    for th in os.listdir(f'/proc/{pid}/task'):
        try: t+=int(open(f'/proc/{pid}/task/{th}/schedstat').read().split()[0])
        except Exception: pass
    return t
def snap(): return {'srv':stat(srv),'sp':stat(sp) if sp else [0]*6,'srvrt':rt(srv),'sprt':rt(sp)}
s0=snap(); t0=time.time()
with cf.ThreadPoolExecutor(C) as ex:
    ids=list(ex.map(lambda i: json.loads(req('POST','/v1/sandboxes',{}))['id'], range(N)))
t1=time.time(); s1=snap()
def desc(pid):
    out=[]
    for p,c in kids(pid):
        out.append(p); out+=desc(p)
    return out
jk=[p for p in desc(srv) if p!=sp]
jcpu=[0,0,0,0,0,0]; jrt=0
for p in jk:
    try: jrt+=rt(p)
    except Exception: pass
    try:
        v=stat(p); jcpu=[a+b for a,b in zip(jcpu,v)]
    except Exception: pass
with cf.ThreadPoolExecutor(C) as ex: list(ex.map(lambda i: req('DELETE','/v1/sandboxes/'+i), ids))
t2=time.time(); time.sleep(0.5); s2=snap()
def d(a,b,i): return (b[i]-a[i])*1000/TCK/N
print(f'N={N} C={C} create wall {t1-t0:.2f}s delete wall {t2-t1:.2f}s jails seen {len(jk)}')
print(f'per create ms: server user {d(s0["srv"],s1["srv"],0):.2f} sys {d(s0["srv"],s1["srv"],1):.2f} minflt {(s1["srv"][4]-s0["srv"][4])/N:.0f}')
print(f'               spawner user {d(s0["sp"],s1["sp"],0):.2f} sys {d(s0["sp"],s1["sp"],1):.2f} minflt {(s1["sp"][4]-s0["sp"][4])/N:.0f}')
print(f'               jails (live, self+children) user {(jcpu[0]+jcpu[2])*1000/TCK/N:.2f} sys {(jcpu[1]+jcpu[3])*1000/TCK/N:.2f} minflt {jcpu[4]/N:.0f}')
print(f'  runtime (schedstat, ms per create): server {(s1["srvrt"]-s0["srvrt"])/1e6/N:.2f} spawner {(s1["sprt"]-s0["sprt"])/1e6/N:.2f} live jails {jrt/1e6/N:.2f}; server children reaped during create user {d(s0["srv"],s1["srv"],2):.2f} sys {d(s0["srv"],s1["srv"],3):.2f}')
print(f'per delete ms: server runtime {(s2["srvrt"]-s1["srvrt"])/1e6/N:.2f} user {d(s1["srv"],s2["srv"],0):.2f} sys {d(s1["srv"],s2["srv"],1):.2f}; reaped children user {d(s1["srv"],s2["srv"],2):.2f} sys {d(s1["srv"],s2["srv"],3):.2f}')
print(f'load {open("/proc/loadavg").read().strip()}')
