import sys, re, collections
live = {}
pending = {}      # ptr -> (site, bytes, cache, comm)
pages = {}     # pfn -> (order, stack, comm)
rx = re.compile(r'^\s*(.{16})-(\d+)\s+\[\d+\].{5,7}\s+[\d.]+: (\w+): (.*)$')
last_page = None
stack = []
def flush():
    global last_page, stack
    if last_page is not None:
        pfn, order, comm = last_page
        pages[pfn] = (order, tuple(stack[:8]), comm)
    last_page = None; stack = []
with open(sys.argv[1], errors='replace') as f:
    for line in f:
        if line.startswith(' => '):
            stack.append(line[4:].strip()); continue
        if line.startswith('#'): continue
        if '<stack trace>' in line:
            flush()
            pid = line.split('[')[0].strip()
            pend = pending.pop(pid, None)
            if pend: last_page = pend
            continue
        m = rx.match(line)
        if not m:
            continue
        comm, ev, rest = m.group(1).strip(), m.group(3), m.group(4)
        flush()
        kv = dict(x.split('=',1) for x in rest.split() if '=' in x)
        if ev in ('kmalloc', 'kmem_cache_alloc'):
            site = kv['call_site'].split('+')[0]
            name = kv.get('name', 'kmalloc-%s' % kv['bytes_alloc'])
            live[kv['ptr']] = (site, int(kv['bytes_alloc']), name, comm)
        elif ev in ('kfree', 'kmem_cache_free'):
            live.pop(kv['ptr'], None)
        elif ev == 'mm_page_alloc':
            pending[m.group(1).strip()+'-'+m.group(2)] = (kv['pfn'], int(kv['order']), comm)
            pages[kv['pfn']] = (int(kv['order']), (), comm)
        elif ev == 'mm_page_free':
            pages.pop(kv['pfn'], None)
flush()
N = float(sys.argv[2])
by = collections.Counter(); cnt = collections.Counter()
for site, b, name, comm in live.values():
    by[(site, name)] += b; cnt[(site, name)] += 1
tot = sum(by.values())
print("slab live, KiB per sandbox: total %.1f" % (tot/1024/N))
for (k, v) in by.most_common(60):
    print("%8.1f KiB %6.1f obj  %-40s %s" % (v/1024/N, cnt[k]/N, k[0], k[1]))
pb = collections.Counter(); pc = collections.Counter()
for pfn, (order, st, comm) in pages.items():
    key = ' < '.join(s.split('+')[0] for s in st if not s.startswith(('__alloc','alloc_pages','get_page_from','__get_free','allocate_slab','new_slab','___slab','__slab','kmalloc_','__kmalloc','folio_alloc','alloc_pages_mpol','__folio_alloc','alloc_frozen')) )[:200]
    pb[key] += 4 << order; pc[key] += 1
print("pages live (unmovable), KiB per sandbox: total %.1f" % (sum(pb.values())/N))
for k, v in pb.most_common(50):
    print("%8.1f KiB %6.1f allocs  %s" % (v/N, pc[k]/N, k))
