import sys,re,statistics,collections
sys.argv=sys.argv
exec(open('/tmp/exec12/tl2.py').read().split('out=collections')[0])
out=collections.defaultdict(list)
for f in sys.argv[1:]:
    ev=sorted(parse(f),key=lambda e:e['t'])
    w=collections.Counter((e['fd']) for e in ev if e['name']=='write' and e['ret'] and 300<=e['ret']<=330)
    a=collections.Counter((e['fd']) for e in ev if e['name']=='write' and e['ret'] and 460<=e['ret']<=490)
    SFD=w.most_common(1)[0][0]; CFD=a.most_common(1)[0][0]
    st=None
    for e in ev:
        n=e['name']
        if n=='read' and e['fd']==SFD and e['ret'] and e['ret']>0: st={'tr':e['t']+(e['d'] or 0)}
        elif st and n=='syncfs' and e['d'] is not None and 's0' not in st: st['s0']=e['t']; st['s1']=e['t']+e['d']
        elif st and n=='fdatasync' and e['d'] is not None and 'f0' not in st: st['f0']=e['t']; st['f1']=e['t']+e['d']
        elif st and n=='write' and e['fd']==CFD and 's1' in st and 'f1' in st:
            tr=st['tr']
            out['ans->syncfs start'].append(st['s0']-tr); out['ans->syncfs end'].append(st['s1']-tr)
            out['ans->fdatasync start'].append(st['f0']-tr); out['ans->fdatasync end'].append(st['f1']-tr)
            out['last->answer'].append(e['t']-max(st['s1'],st['f1'])); out['syncfs last'].append(st['s1']>st['f1'])
            out['ans->answer'].append(e['t']-tr); st=None
for k,v in out.items(): print('%-22s n=%d p50 %.3f mean %.3f'%(k,len(v),statistics.median(v),statistics.mean(v)))
