import fcntl, os, sys, time
# loopadd.py N: add N loop devices at free indexes (LOOP_CTL_ADD), wait for a
# signal file to go, remove them (LOOP_CTL_REMOVE).
N = int(sys.argv[1]); hold = sys.argv[2]
ctl = os.open('/dev/loop-control', os.O_RDWR)
start = 60000
added = []
open(hold + '.ready', 'w').write(str(os.getpid()))
while not os.path.exists(hold + '.go'): time.sleep(0.05)
for i in range(start, start + N):
    try:
        fcntl.ioctl(ctl, 0x4C80, i); added.append(i)
    except OSError as e:
        print('add', i, e)
open(hold, 'w').close()
while os.path.exists(hold): time.sleep(0.1)
for i in added:
    fcntl.ioctl(ctl, 0x4C81, i)
print('added and removed', len(added))
