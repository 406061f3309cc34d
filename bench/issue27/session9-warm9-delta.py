import json,sys,statistics as st
for f in sys.argv[1:]:
    rs=[json.loads(l) for l in open(f) if l.startswith('{')]
    if not rs: print(f,'none'); continue
    def med(ph,k,w='sidecar'): return st.median([r[ph][w][k] for r in rs])
    def dmed(k,w='sidecar'): return st.median([r['first'][w][k]-r['second'][w][k] for r in rs])
    print(f"{f.split('/')[-1]:22s} n={len(rs)} load {min(r['load'] for r in rs):.0f}-{max(r['load'] for r in rs):.0f} | sidecar first: faults {med('first','page-faults'):.0f} syscalls {med('first','raw_syscalls:sys_enter'):.0f} ctxsw {med('first','context-switches'):.0f} cpu {med('first','task-clock'):.2f} ms | second: {med('second','page-faults'):.0f} {med('second','raw_syscalls:sys_enter'):.0f} {med('second','context-switches'):.0f} {med('second','task-clock'):.2f} | first-second (median of pairs): faults {dmed('page-faults'):+.0f} syscalls {dmed('raw_syscalls:sys_enter'):+.0f} cpu {dmed('task-clock'):+.2f} | claim (create window) syscalls {med('create','raw_syscalls:sys_enter'):.0f}")
