import sys,re
for ln in open(sys.argv[1],errors='replace'):
    m=re.match(r'(\d+)\s+(\S+)\s+(\w+)\((.*)',ln)
    if not m: 
        m2=re.match(r'(\d+)\s+(\S+)\s+<\.\.\. (\w+) resumed>.*?(<[\d.]+>)?$',ln.strip())
        if m2 and m2.group(3)=='fsync': print(m2.group(2),'tid',m2.group(1),'fsync ended',m2.group(4) or '')
        continue
    tid,ts,call,rest=m.groups()
    dur=re.search(r'<([\d.]+)>\s*$',ln); dur=dur.group(0).strip() if dur else ''
    if call=='pwrite64':
        tag=[]
        if 'creating' in rest: tag.append('creating')
        if 'active' in rest and 'sidecar.sock' in rest: tag.append('active + endpoint')
        if tag: print(ts,'tid',tid,'pwrite64 [page with the row: %s]'%' '.join(tag))
    elif call=='fsync': print(ts,'tid',tid,'fsync',dur if dur else '(unfinished)')
    elif call=='sendmsg' and '/proc/self/fd' in rest: print(ts,'tid',tid,'sendmsg spawn request')
    elif call=='connect' and 'AF_UNIX' in rest: print(ts,'tid',tid,'connect (sidecar)')
    elif call=='write' and 'GET /health' in rest: print(ts,'tid',tid,'write GET /health')
    elif call=='write' and 'HTTP/1.1 201' in rest: print(ts,'tid',tid,'write 201 Created')
    elif call=='read' and 'healthy' in rest: print(ts,'tid',tid,'read /health answer')
    elif call=='write' and 'POST /exec' in rest: print(ts,'tid',tid,'write POST /exec (first exec)')
