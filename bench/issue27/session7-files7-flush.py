import os, sys, time, ctypes, statistics
libc = ctypes.CDLL("libc.so.6", use_errno=True)
mnt = sys.argv[1]; mode = sys.argv[2]; n = int(sys.argv[3])
d = os.path.join(mnt, "ws"); os.makedirs(d, exist_ok=True)
data = b"x"*4096
dfd = os.open(d, os.O_RDONLY|os.O_DIRECTORY)
sfd = os.open(mnt, os.O_RDONLY|os.O_DIRECTORY)
t_f, t_d, t_s, t_all = [], [], [], []
for i in range(n):
    t0 = time.perf_counter()
    tmp = os.path.join(d, ".tmp%d" % i)
    fd = os.open(tmp, os.O_WRONLY|os.O_CREAT|os.O_EXCL, 0o644)
    os.write(fd, data)
    a = time.perf_counter(); os.fsync(fd); b = time.perf_counter()
    os.close(fd)
    os.rename(tmp, os.path.join(d, "f.bin"))
    c = time.perf_counter(); os.fsync(dfd); e = time.perf_counter()
    s0 = time.perf_counter()
    if mode == "syncfs":
        if libc.syncfs(sfd) != 0: raise OSError(ctypes.get_errno(), "syncfs")
    s1 = time.perf_counter()
    t_f.append(b-a); t_d.append(e-c); t_s.append(s1-s0); t_all.append(s1-t0)
m = lambda x: "%.3f" % (statistics.median(x)*1000)
print(mode, "p50 ms: fsync(file)", m(t_f), "fsync(dir)", m(t_d), "syncfs", m(t_s), "all", m(t_all))
