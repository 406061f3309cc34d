import json,sys,os
def ld(d,n):
    p=f'{d}/{n}.json'
    return json.load(open(p)) if os.path.exists(p) else None
for d in sys.argv[1:]:
    c,w,h,i=ld(d,'cold'),ld(d,'warm'),ld(d,'c100'),ld(d,'idle')
    def r(x,k,m='p50_vs_spawn'):
        v=(x or {}).get(k) or {}
        s=v.get(m)
        ph=v.get('vs_phase_floors') or {}
        return f"{s}" + (f"/{ph.get(m)}" if ph else "")
    out=[os.path.basename(d), open(d+'/commit').read().strip()]
    out.append(f"F {c['floors']['spawn']['p50_ms']} B {c['floors']['bwrap']['p50_ms']}")
    out.append(f"1a {r(c,'create_to_first_exec','p50_vs_bwrap')}B ({c['create_to_first_exec']['p50_ms']}ms)")
    out.append(f"1b {r(w,'create_to_first_exec')}F ({w['create_to_first_exec']['p50_ms']}ms)")
    out.append(f"exec off {r(c,'exec')} warm {r(w,'exec')} p99 {r(c,'exec','p99_vs_spawn')} {r(w,'exec','p99_vs_spawn')}")
    out.append(f"4k off {r(c,'file_write_read_4kib')} warm {r(w,'file_write_read_4kib')}")
    if h: out.append(f"c100 p95 {h['burst_create']['p95_vs_bwrap']}B ({h['burst_create']['p95_ms']}ms) fail {len(h.get('failures') or [])}")
    if i and i.get('idle'):
        ii=i['idle']; out.append(f"idle {ii['answered']}/{ii['requested']} {ii['host_memory_per_sandbox_bytes']/2**20:.2f}MiB thr p50 {ii['memory']['threads_p50']} max {ii['memory']['threads_max']} host {ii['host_threads_per_sandbox']}")
    s=ld(d,'snap')
    if s: out.append(f"fork1 {s['snapshots']['fork1_to_first_exec']['p50_vs_bwrap']}B")
    print(' | '.join(out))
