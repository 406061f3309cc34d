# split a server strace -f -tt log into request windows (request read .. response write) and count syscalls
import re, sys, collections
lines = open(sys.argv[1]).read().splitlines()
RT = ('futex','nanosleep','rt_sigreturn','rt_sigprocmask','getpid','tgkill','sched_yield','epoll_pwait','madvise','mmap','munmap','clock_gettime')
win = []; cur = None
for i, l in enumerate(lines):
    if re.search(r'"(P?OST|GET|DELETE) /v1/', l) and ('read(' in l or 'resumed>' in l):
        m = re.search(r'"(P?OST|GET|DELETE) (/v1/\S+)', l)
        path = m.group(2)
        kind = 'create' if path == '/v1/sandboxes' and m.group(1) in ('POST','OST') else ('exec' if path.endswith('/exec') else m.group(1)+' '+path[:20])
        cur = [kind, i, None]
    elif cur and ('write(22, "HTTP/1.1 2' in l or re.search(r'write\(\d+, "HTTP/1.1 20[014]', l)):
        cur[2] = i; win.append(cur); cur = None
n = collections.Counter()
for kind, a, b in win:
    c = collections.Counter(); rt = 0
    for l in lines[a:b+1]:
        m = re.match(r'\d+\s+\S+\s+(?:<\.\.\. )?(\w+)', l)
        if not m or m.group(1) in ('exited',): continue
        name = m.group(1)
        if 'resumed>' in l and '<... ' in l: continue  # count the entry only
        if name in RT: rt += 1; continue
        c[name] += 1
    k = kind
    if kind == 'exec': n['x'] += 1
    if kind == 'create': n['x'] = 0
    label = kind if kind != 'exec' else f'exec{n["x"]}'
    print(f'{label:8} {sum(c.values()):5} (+{rt} rt) ', ' '.join(f'{k}:{v}' for k, v in c.most_common(14)))
