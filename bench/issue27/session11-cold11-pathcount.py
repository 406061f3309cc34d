import sys
# per create: the active row's commit (its page write and the fsync after it) against the
# sidecar's /health answer: the commit's fsync ended before the answer was read (off the
# path) or after (the create waited for it)
def t(ts):
    h,m,s=ts.split(':'); return int(h)*3600+int(m)*60+float(s)
for ln in open(sys.argv[1]):
    if ln.startswith('=='): print(ln.strip()); st={}; continue
    p=ln.split(); ts=t(p[0]); tid=p[2]
    if 'sendmsg spawn' in ln: st={'spawn':ts}
    elif 'active + endpoint' in ln: st['active']=ts; st['atid']=tid
    elif 'fsync' in ln and 'active' in st and 'afs' not in st:
        if 'unfinished' in ln: continue
        dur=float(p[-1].strip('<>')) if p[-1].startswith('<') else 0
        st['afs']=ts+dur if 'ended' not in ln else ts
    elif 'read /health answer' in ln: st['health']=ts
    elif 'write 201' in ln and 'spawn' in st:
        a=st.get('afs'); h=st.get('health')
        if a is None or h is None:
            print('  (commit or answer not matched in the trace: active page %s, fsync %s, answer %s)' % (st.get('active'), a, h)); st={}; continue
        print('  spawn->health answer %6.1f ms; active commit ended %+7.1f ms from the health answer (%s); health answer->201 %6.1f ms' % ((h-st['spawn'])*1e3, (a-h)*1e3, 'before: off the path' if a<h else 'after: on the path', (ts-h)*1e3))
        st={}
