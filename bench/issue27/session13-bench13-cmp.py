import json,glob,statistics as st,os
runs={}
for d in ['/dev/shm/b13/ab','/dev/shm/b13/ab2','/dev/shm/b13/ab3']:
    for p in sorted(glob.glob(d+'/*.json')):
        try: r=json.load(open(p))
        except: continue
        runs[os.path.basename(p)[:-5]]=r
def g(r,k,*path):
    v=r.get(k) or {}
    for x in path: v=(v or {}).get(x) if isinstance(v,dict) else None
    return v
def sp(vals):
    vals=[x for x in vals if x]
    if len(vals)<2: return 'n<2'
    return f"n {len(vals)} {min(vals):.2f}-{max(vals):.2f} max/min {max(vals)/min(vals):.2f} cv {st.pstdev(vals)/st.mean(vals)*100:.0f}%"
def wid(r,k,pt,ci):
    a=g(r,k,*pt); b=g(r,k,*ci)
    return (b[1]-b[0])/a if a and b else None
print("runs:", ' '.join(f"{n}(F {r['floors']['spawn']['p50_ms']:.1f} load {r['host']['load_average_start'][0]:.0f})" for n,r in runs.items()))
for mode in ['cold','warm']:
    new=[(n,r) for n,r in runs.items() if n.startswith('new') and mode in n]
    new3=[(n,r) for n,r in new if n.startswith('new3') or (mode=='warm' and False)]
    old=[(n,r) for n,r in runs.items() if n.startswith('old') and mode in n]
    print(f"\n=== {mode}: new-binary runs {[n for n,_ in new]}; old-binary runs {[n for n,_ in old]}")
    print("  pooled F:", sp([r['floors']['spawn']['p50_ms'] for _,r in new+old]), " B:", sp([(r['floors'].get('bwrap') or {}).get('p50_ms') for _,r in new+old]))
    for k,sel in [('exec',new),('file_write_read_4kib',new),('create_to_first_exec',new3),('burst_create_to_first_exec',new3)]:
        print(f"  {k}  (runs {len(sel)})")
        print(f"    p50 ms (new bins)      {sp([g(r,k,'p50_ms') for _,r in sel])}   old bins: {sp([g(r,k,'p50_ms') for _,r in old])}")
        print(f"    pooled /F  (old method) {sp([g(r,k,'p50_vs_spawn') for _,r in sel])}   old bins: {sp([g(r,k,'p50_vs_spawn') for _,r in old])}")
        print(f"    in-phase /F (new)       {sp([g(r,k,'vs_phase_floors','p50_vs_spawn') for _,r in sel])}")
        print(f"    pooled /B  (old method) {sp([g(r,k,'p50_vs_bwrap') for _,r in sel])}   old bins: {sp([g(r,k,'p50_vs_bwrap') for _,r in old])}")
        print(f"    in-phase /B (new)       {sp([g(r,k,'vs_phase_floors','p50_vs_bwrap') for _,r in sel])}")
        w1=[wid(r,k,['p50_vs_spawn'],['p50_vs_spawn_ci95']) for _,r in sel]; w2=[wid(r,k,['vs_phase_floors','p50_vs_spawn'],['vs_phase_floors','p50_vs_spawn_ci95']) for _,r in sel]
        w3=[wid(r,k,['p50_vs_bwrap'],['p50_vs_bwrap_ci95']) for _,r in sel]; w4=[wid(r,k,['vs_phase_floors','p50_vs_bwrap'],['vs_phase_floors','p50_vs_bwrap_ci95']) for _,r in sel]
        f=lambda w: ' '.join(f"{x*100:.0f}%" for x in w if x is not None)
        print(f"    95% interval width/point: pooled F [{f(w1)}]  in-phase F [{f(w2)}]  pooled B [{f(w3)}]  in-phase B [{f(w4)}]")
    for n,r in new:
        ph={p['phase']:p for p in r['floors']['phases']}
        print(f"    {n}: phase F p50 ms " + ' '.join(f"{k} {ph[k]['spawn']['p50_ms']:.1f}" for k in ['start','cli_start','create','burst_create','exec','files','delete','end'] if k in ph and ph[k]['spawn']) + f" | create phase how={ph['create']['how']}")
