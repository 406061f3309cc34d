import os, sys, time, statistics
mnt = sys.argv[1]; mode = sys.argv[2]; n = int(sys.argv[3])
d = os.path.join(mnt, "ws2"); os.makedirs(d, exist_ok=True)
data = b"x"*4096
dfd = os.open(d, os.O_RDONLY|os.O_DIRECTORY)
ts = []
for i in range(n):
    t0 = time.perf_counter()
    tmp = os.path.join(d, ".tmp%d" % i)
    fd = os.open(tmp, os.O_WRONLY|os.O_CREAT|os.O_EXCL, 0o644)
    os.write(fd, data)
    if mode == "fsync-first":   # the sidecar's order: fsync, rename, fsync(dir)
        os.fsync(fd); os.close(fd); os.rename(tmp, os.path.join(d, "f.bin")); os.fsync(dfd)
    else:                       # rename first: one journal commit for both?
        os.rename(tmp, os.path.join(d, "f.bin")); os.fsync(fd); os.close(fd); os.fsync(dfd)
    ts.append(time.perf_counter()-t0)
print(mode, "p50 ms %.3f" % (statistics.median(ts)*1000))
