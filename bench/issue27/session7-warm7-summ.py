import json,sys,statistics as S
for f in sys.argv[1:]:
    rs=json.load(open(f))
    out=[]
    for ph in ('create+first','second'):
        for who in ('server','sidecar'):
            for ev,short in (('page-faults','flt'),('context-switches','cs'),('raw_syscalls:sys_enter','sys'),('task-clock','ms')):
                v=[r[ph][who].get(ev,0) for r in rs]
                out.append(f"{ph[:6]}/{who[:4]}/{short}={S.median(v):.0f}")
    print(f, 'n=%d'%len(rs), 'load=%.1f'%S.median([r['load'] for r in rs])); print('  '+' '.join(out))
