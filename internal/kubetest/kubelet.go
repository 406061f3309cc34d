package kubetest

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A Kubelet stands in for a node in one namespace. There is no scheduler
// and no container runtime here, so it does their job for the pods the
// kube driver makes: it polls for new pods and runs each one's single
// container — boxkite-sidecar — as a local process, then reports the pod
// Running and Ready.
//
// Each pod gets its own loopback address (127.x.y.z, from the process id
// and a counter, and free when the pod starts) as its podIP, so the container's port is used unchanged and the
// driver dials podIP:port as it would in a cluster. The container's volume
// mounts become temporary directories: emptyDirs empty, Secrets with their
// keys as files, a PersistentVolumeClaim one directory per claim that
// outlives its pods (the kubelet's life); arguments and environment values under a mount path are
// rewritten to the directory, and a listen address of 0.0.0.0 to the podIP.
// The process sees this host's root; a claim mounted below another mount
// (a boxkite volume in the workspace) is bound there, as root, in a
// mount namespace of the process's own.
// As root, the process runs as the pod's runAsUser/runAsGroup with its
// fsGroup as a supplementary group, and a Secret's files are as a real
// kubelet leaves them: only the keys its items name (all without items),
// owned by root, in the mode of the item or of defaultMode, with the
// fsGroup as their group and group read added for it.
//
// A mount inside /proc is a runtime's: one runc would refuse (anything
// but the files lxcfs stands in for, runcProcMounts) fails the pod, as
// runc fails its container; as root, the others (the file a subPath
// names in its volume) are bound read-only over their place in a mount
// namespace the process starts in, so a command sees them in /proc.
//
// As root, each pod's process runs in a cgroup of its own, as a
// container does: boxkite/kubetest-UID below the test's own cgroup in
// every hierarchy the sidecar reads its use from (cgroup v2's, or v1's
// memory, pids and cpuacct, and those of the jail's limits and freezer).
// So a sidecar's GET /usage (Stats, getMetrics) is its pod's alone, not
// the test's or another pod's. The cgroup has the pod's limits, as a
// kubelet sets its pod cgroup's (pkg/kubelet/cm ResourceConfigForPod):
// the container's CPU limit as a CFS quota over a 100 ms period
// (cpu.max, cpu.cfs_quota_us; 1 ms at least), its memory limit as the
// memory limit without swap (memory.max and memory.swap.max 0;
// memory.limit_in_bytes and memsw), and the node's podPidsLimit
// (PodPidsLimit) as pids.max; a limit the pod does not ask for is none.
// They are the jail's (jail.Limits): on cgroup v1 the memory limit also
// bounds TCP buffers, as cgroup v2 always does. Requests, which a kubelet
// turns into CPU shares, an emptyDir's sizeLimit and ephemeral-storage,
// which it enforces by eviction, are not enforced. The process is in the
// cgroup before the sidecar's first instruction, its limits with it
// (placeInCgroup). A pod's end removes its cgroup, killing anything left
// in it; Stop removes the boxkite parents too once nothing is below them.
//
// A pod deleted from the API has its process killed; a process that exits
// marks its pod Failed. A pod running longer than its
// activeDeadlineSeconds (counted from its start, as a kubelet counts it)
// has its process killed and is marked Failed, reason DeadlineExceeded.
// Probes are not run.
type Kubelet struct {
	client   kubernetes.Interface
	ns       string
	sidecar  string // the boxkite-sidecar binary a container's command names
	dir      string
	mu       sync.Mutex
	pods     map[string]*podProc // by podKey
	cancel   context.CancelFunc
	done     chan struct{}
	started  atomic.Int64
	held     atomic.Int32  // Holds not released: new pods are left pending
	cgroups  *jail.Cgroups // where pods get cgroups of their own; nil when not root
	pids     int64         // every pod's pids.max (PodPidsLimit); 0 for none
	logf     func(format string, args ...any)
	stopOnce sync.Once
}

type podProc struct {
	name string
	ip   string
	cmd  *exec.Cmd
	dir  string
	cg   jail.Cgroup   // the pod's own cgroup; none when not root
	exit chan struct{} // closed when the process exits
	logf func(format string, args ...any)
}

// podKey tells pods apart: a pod deleted and made again under the same
// name has a new UID.
func podKey(pod *corev1.Pod) string { return pod.Name + "/" + string(pod.UID) }

// nextIP numbers pod addresses across every Kubelet of the test binary.
var nextIP atomic.Uint32

// podIP returns a loopback address for a new pod whose container listens
// on port, free there now. Test binaries run side by side (go test runs
// packages in parallel, and deploy and server/kube both run kubelets), so
// the addresses start from the process id: two binaries counting from the
// same start would hand two pods one address and port, and the second
// sidecar would fail to listen.
func podIP(port int32) (string, error) {
	base := uint32(os.Getpid()%12000) * 1024
	for range 100 {
		n := base + nextIP.Add(1)%1024
		ip := fmt.Sprintf("127.%d.%d.%d", 2+n/(250*256), n/250%256, n%250+1)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
		if err != nil {
			continue // another binary's pod has it
		}
		l.Close()
		return ip, nil
	}
	return "", fmt.Errorf("no free pod address for port %d after 100 tries", port)
}

// A KubeletOption sets what a node's kubelet configuration would.
type KubeletOption func(*Kubelet)

// PodPidsLimit gives each pod's cgroup a limit of n tasks (threads
// included), as a kubelet's podPidsLimit (--pod-max-pids) does: Kubernetes
// has no per-pod field for it. A kubelet's default, and this one's, is
// none.
func PodPidsLimit(n int64) KubeletOption { return func(k *Kubelet) { k.pids = n } }

// StartKubelet runs a Kubelet for namespace ns until t ends. sidecar is the
// boxkite-sidecar binary to run (servertest.SidecarBinary).
func (c *Cluster) StartKubelet(t testing.TB, ns, sidecar string, opts ...KubeletOption) *Kubelet {
	t.Helper()
	dir, err := os.MkdirTemp("", "kubelet-")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	_ = os.Chmod(dir, 0o755) // pod processes run as another user
	var cgs *jail.Cgroups
	if os.Geteuid() == 0 {
		if cgs, err = podCgroups(); err != nil {
			os.RemoveAll(dir)
			t.Fatalf("kubetest: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kubelet{
		client: c.Client, ns: ns, sidecar: sidecar, dir: dir,
		pods: map[string]*podProc{}, cancel: cancel, done: make(chan struct{}),
		logf: t.Logf, cgroups: cgs,
	}
	for _, o := range opts {
		o(k)
	}
	go k.run(ctx)
	t.Cleanup(k.Stop)
	return k
}

// Stop kills every pod process and stops watching.
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		k.cancel()
		<-k.done
		k.mu.Lock()
		procs := make([]*podProc, 0, len(k.pods))
		for _, p := range k.pods {
			procs = append(procs, p)
		}
		k.mu.Unlock()
		for _, p := range procs {
			p.kill()
		}
		if k.cgroups != nil {
			removePodCgroupParents(k.cgroups)
		}
		os.RemoveAll(k.dir)
	})
}

// Hold leaves the pods made from now on pending, as a node that has not
// started them yet, until the returned release is called (once or more):
// a test holds a driver in its wait for a pod to run. Pods running go on,
// and deleted ones are still killed.
func (k *Kubelet) Hold() (release func()) {
	k.held.Add(1)
	var once sync.Once
	return func() { once.Do(func() { k.held.Add(-1) }) }
}

// Started is how many pods this kubelet has started (cold starts and warm
// pods alike).
func (k *Kubelet) Started() int { return int(k.started.Load()) }

// Running returns the names of the pods whose process this kubelet runs.
func (k *Kubelet) Running() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, p := range k.pods {
		if p != nil {
			out = append(out, p.name)
		}
	}
	return out
}

// VolumeDir is the directory standing in for volume vol of the running
// pod named pod, "" when this kubelet runs no such pod.
func (k *Kubelet) VolumeDir(pod, vol string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pods {
		if p != nil && p.name == pod {
			return filepath.Join(p.dir, vol)
		}
	}
	return ""
}

// CgroupDirs are the directories of the cgroup of the running pod named
// pod, one per hierarchy: none when this kubelet runs no such pod, or
// runs pods in its own cgroup (not root).
func (k *Kubelet) CgroupDirs(pod string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pods {
		if p != nil && p.name == pod {
			return slices.Clone(p.cg.Dirs)
		}
	}
	return nil
}

func (k *Kubelet) run(ctx context.Context) {
	defer close(k.done)
	for ctx.Err() == nil {
		k.sync(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sync starts processes for new pods and kills those of deleted ones.
func (k *Kubelet) sync(ctx context.Context) {
	list, err := k.client.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	seen := map[string]bool{}
	var overdue []*corev1.Pod
	for i := range list.Items {
		pod := &list.Items[i]
		seen[podKey(pod)] = true
		k.mu.Lock()
		p, known := k.pods[podKey(pod)]
		if !known && k.held.Load() == 0 && pod.DeletionTimestamp == nil && (pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "") {
			k.pods[podKey(pod)] = nil // claimed; start fills it in
			go k.start(ctx, pod)
		}
		if p != nil && pastDeadline(pod, time.Now()) {
			overdue = append(overdue, pod)
		}
		k.mu.Unlock()
	}
	for _, pod := range overdue {
		k.endAtDeadline(ctx, pod)
	}
	k.mu.Lock()
	gone := map[string]*podProc{}
	for key, p := range k.pods {
		switch {
		case seen[key]:
		case p == nil:
			delete(k.pods, key) // still starting: start sees it gone and kills it
		default:
			gone[key] = p
		}
	}
	k.mu.Unlock()
	// Killed before forgotten, so Running never omits a live process.
	for key, p := range gone {
		p.kill()
		k.mu.Lock()
		delete(k.pods, key)
		k.mu.Unlock()
	}
}

// pastDeadline reports whether pod, running, has run longer than its
// activeDeadlineSeconds at now.
func pastDeadline(pod *corev1.Pod, now time.Time) bool {
	secs, start := pod.Spec.ActiveDeadlineSeconds, pod.Status.StartTime
	return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && secs != nil && start != nil &&
		now.Sub(start.Time) >= time.Duration(*secs)*time.Second
}

// endAtDeadline kills the process of pod, past its deadline, and reports
// the pod Failed as a kubelet does (DeadlineExceeded).
func (k *Kubelet) endAtDeadline(ctx context.Context, pod *corev1.Pod) {
	k.mu.Lock()
	p := k.pods[podKey(pod)]
	k.mu.Unlock()
	if p == nil {
		return
	}
	p.kill()
	k.mu.Lock()
	delete(k.pods, podKey(pod)) // its phase keeps it from being started again
	k.mu.Unlock()
	k.logf("kubetest kubelet: pod %s ran past its activeDeadlineSeconds (%d s)", pod.Name, *pod.Spec.ActiveDeadlineSeconds)
	k.setStatus(ctx, pod, corev1.PodFailed, p.ip, deadlineMessage)
}

// deadlineMessage is a kubelet's message of a pod past its deadline; its
// reason is DeadlineExceeded.
const deadlineMessage = "Pod was active on the node longer than the specified deadline"

// start runs pod's container and reports the pod Running once it answers
// on its port, or Failed if it cannot be started.
func (k *Kubelet) start(ctx context.Context, pod *corev1.Pod) {
	p, err := k.launch(pod)
	if err != nil {
		k.logf("kubetest kubelet: start pod %s: %v", pod.Name, err)
		k.setStatus(ctx, pod, corev1.PodFailed, "", err.Error())
		return
	}
	k.started.Add(1)
	k.mu.Lock()
	if _, ok := k.pods[podKey(pod)]; !ok { // deleted meanwhile
		k.mu.Unlock()
		p.kill()
		return
	}
	k.pods[podKey(pod)] = p
	k.mu.Unlock()
	port := pod.Spec.Containers[0].Ports[0].ContainerPort
	if err := waitTLS(ctx, net.JoinHostPort(p.ip, strconv.Itoa(int(port))), p.exit); err != nil {
		k.logf("kubetest kubelet: pod %s never answered: %v", pod.Name, err)
		k.setStatus(ctx, pod, corev1.PodFailed, "", err.Error())
		return
	}
	k.setStatus(ctx, pod, corev1.PodRunning, p.ip, "")
	go func() {
		<-p.exit
		if ctx.Err() == nil && !p.killed() {
			k.setStatus(ctx, pod, corev1.PodFailed, p.ip, "the container exited")
		}
	}()
}

// launch prepares the pod's volumes and starts its container's process.
func (k *Kubelet) launch(pod *corev1.Pod) (*podProc, error) {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.Containers[0].Ports) == 0 {
		return nil, fmt.Errorf("want one container with a port")
	}
	ctr := pod.Spec.Containers[0]
	ip, err := podIP(ctr.Ports[0].ContainerPort)
	if err != nil {
		return nil, err
	}
	// By UID, as a real kubelet keeps it: a pod made again under the same
	// name (a resumed sandbox's) must not share the old one's files,
	// which its kill removes.
	dir := filepath.Join(k.dir, pod.Name+"-"+string(pod.UID))
	ids := podIDs(pod)
	mounts := map[string]string{} // mount path → host dir
	binds := map[string]bind{}    // a place → the host file or directory bound over it
	var claims []string           // the mount paths of claims
	for _, m := range ctr.VolumeMounts {
		host := filepath.Join(dir, m.Name)
		if claim := claimName(pod, m.Name); claim != "" {
			// A claim outlives its pods, as its PersistentVolume does:
			// one directory per claim for the kubelet's life.
			host = filepath.Join(k.dir, "claims", claim)
			claims = append(claims, m.MountPath)
		}
		if err := k.volume(pod, m.Name, host, ids); err != nil {
			return nil, err
		}
		if inProc(m.MountPath) {
			if !slices.Contains(runcProcMounts, m.MountPath) {
				return nil, fmt.Errorf("mount %s: %q cannot be mounted because it is inside /proc (runc allows only %v)", m.Name, m.MountPath, runcProcMounts)
			}
			binds[m.MountPath] = bind{src: filepath.Join(host, m.SubPath)}
			continue
		}
		mounts[m.MountPath] = host
	}
	// A claim mounted below another mount (a boxkite volume in the
	// workspace) is what commands find there: its directory is bound,
	// read-write, over its place in the other mount's directory.
	for _, mp := range claims {
		parent := ""
		for other := range mounts {
			if strings.HasPrefix(mp, other+"/") && len(other) > len(parent) {
				parent = other
			}
		}
		if parent == "" {
			continue // a place on the host's own root, which a pod here shares
		}
		at := filepath.Join(mounts[parent], strings.TrimPrefix(mp, parent))
		if err := os.MkdirAll(at, 0o755); err != nil {
			return nil, fmt.Errorf("mount point of %s: %w", mp, err)
		}
		binds[at] = bind{src: mounts[mp], rw: true}
	}
	rewrite := func(v string) string {
		for mp, host := range mounts {
			if v == mp || strings.HasPrefix(v, mp+"/") {
				return host + v[len(mp):]
			}
		}
		return strings.Replace(v, "0.0.0.0:", ip+":", 1)
	}
	var args []string
	for _, a := range ctr.Args {
		args = append(args, rewrite(a))
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, e := range ctr.Env {
		env = append(env, e.Name+"="+rewrite(e.Value))
	}
	log, err := os.Create(filepath.Join(dir, "container.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(k.sidecar, args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ids.uid >= 0 {
		cred := &syscall.Credential{Uid: uint32(ids.uid), Gid: uint32(ids.gid)}
		if ids.fsGroup >= 0 {
			cred.Groups = []uint32{uint32(ids.fsGroup)}
		}
		cmd.SysProcAttr.Credential = cred
	}
	var (
		cg     jail.Cgroup
		placed func()
	)
	if k.cgroups != nil {
		if cg, err = newPodCgroup(k.cgroups, string(pod.UID), podLimits(pod, k.pids)); err != nil {
			log.Close()
			return nil, err
		}
		if placed, err = placeInCgroup(cmd, cg.Dirs); err != nil {
			log.Close()
			_ = cg.Remove(context.Background())
			return nil, fmt.Errorf("start container: %w", err)
		}
	}
	p := &podProc{name: pod.Name, ip: ip, cmd: cmd, dir: dir, cg: cg, exit: make(chan struct{}), logf: k.logf}
	if os.Geteuid() != 0 {
		binds = nil // no mount namespace to bind them in: the host's /proc shows through, a claim below another mount does not
	}
	err = startAndWait(cmd, binds, func() {
		log.Close()
		close(p.exit)
	})
	if placed != nil {
		placed()
	}
	if err != nil {
		log.Close()
		_ = cg.Remove(context.Background())
		return nil, fmt.Errorf("start container: %w", err)
	}
	return p, nil
}

// runcProcMounts are the only places inside /proc runc lets a container
// mount something (checkProcMount: files lxcfs stands in for); a mount
// anywhere else there fails the container's start.
var runcProcMounts = []string{
	"/proc/cpuinfo", "/proc/diskstats", "/proc/meminfo", "/proc/stat", "/proc/swaps",
	"/proc/uptime", "/proc/loadavg", "/proc/slabinfo", "/proc/net/dev",
	"/proc/sys/kernel/ns_last_pid", "/proc/sys/crypto/fips_enabled",
}

func inProc(path string) bool { return path == "/proc" || strings.HasPrefix(path, "/proc/") }

// startAndWait starts cmd, then waits for it in the background and calls
// exited. With binds (a file of /proc → the host file a runtime would
// mount there, read-only; a claim's directory below another mount) the process starts in a mount namespace of its
// own, made on a thread locked to the goroutine that then waits. That
// thread never ends, nor goes back to the scheduler (its mount namespace
// is not the test's): the runtime ends a locked thread whose goroutine
// returns, and every process that thread had started before it was
// locked here (the test's API server, etcd, an object store, another
// pod: each with a Pdeathsig, which the end of its parent thread
// delivers) would be killed with it. CI saw the API server die mid-suite.
func startAndWait(cmd *exec.Cmd, binds map[string]bind, exited func()) error {
	if len(binds) == 0 {
		if err := cmd.Start(); err != nil {
			return err
		}
		go func() {
			_ = cmd.Wait()
			exited()
		}()
		return nil
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := startInMountNS(cmd, binds)
		started <- err
		if err == nil {
			_ = cmd.Wait()
			exited()
		}
		select {} // parked for the test binary's life; see above
	}()
	return <-started
}

// A bind is a host file or directory bound over a place in a pod's
// mount namespace: read-only (a file a runtime mounts in /proc) unless rw
// (a claim below another mount).
type bind struct {
	src string
	rw  bool
}

// startInMountNS moves the calling thread, locked, to a new mount
// namespace (nothing propagating back), binds each source over its place,
// and starts cmd there.
func startInMountNS(cmd *exec.Cmd, binds map[string]bind) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	for dst, b := range binds {
		if err := unix.Mount(b.src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", b.src, dst, err)
		}
		if b.rw {
			continue
		}
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount %s read-only: %w", dst, err)
		}
	}
	return cmd.Start()
}

// podLimits are the cgroup limits a kubelet gives pod's cgroup
// (ResourceConfigForPod, for a pod of one container): its CPU and memory
// limits, each only when it sets one, and pids, the node's podPidsLimit.
func podLimits(pod *corev1.Pod, pids int64) jail.Limits {
	lim := pod.Spec.Containers[0].Resources.Limits
	l := jail.Limits{Pids: max(pids, 0)}
	if q, ok := lim[corev1.ResourceCPU]; ok && !q.IsZero() {
		l.CPUs = float64(q.MilliValue()) / 1000
	}
	if q, ok := lim[corev1.ResourceMemory]; ok && !q.IsZero() {
		l.Memory = q.Value()
	}
	return l
}

// placeInCgroup has cmd's process start in the cgroup of dirs before the
// container's first instruction, as a runtime starts a container in its
// cgroup, and returns what closes the descriptors it opened once cmd
// started. A cgroup2 directory takes the process at its clone (clone3's
// CLONE_INTO_CGROUP: SysProcAttr.UseCgroupFD). For v1 hierarchies, which
// have nothing of the kind, the process starts as /bin/sh, which writes 0
// (itself, single-threaded: no threadgroup lock) to each one's tasks file
// and then execs the container's command, as sidecar/jail's clone places a
// jail (cgroup_place_linux.go). It writes through descriptors the kubelet
// opened as root, because v1 checks the opener's credentials (Linux 5.16),
// not the writer's, which by then are the pod's user's; the exec closes
// them.
func placeInCgroup(cmd *exec.Cmd, dirs []string) (placed func(), err error) {
	var files []*os.File
	cgroup2 := -1
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
		if cgroup2 >= 0 {
			_ = unix.Close(cgroup2)
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	for _, dir := range dirs {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return nil, fmt.Errorf("place in cgroup %s: %w", dir, err)
		}
		if st.Type == unix.CGROUP2_SUPER_MAGIC {
			if cgroup2 >= 0 {
				return nil, fmt.Errorf("place in cgroup %s: a second cgroup2 directory", dir)
			}
			if cgroup2, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				return nil, fmt.Errorf("place in cgroup %s: %w", dir, err)
			}
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("place in cgroup: %w", err)
		}
		files = append(files, f)
	}
	if cgroup2 >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroup2
	}
	if len(files) > 0 {
		var writes, closes []string
		for i := range files {
			fd := strconv.Itoa(3 + i) // ExtraFiles' numbers in the child
			writes = append(writes, "echo 0 >&"+fd)
			closes = append(closes, fd+">&-")
		}
		script := strings.Join(writes, " && ") + ` || exit 126; exec "$0" "$@" ` + strings.Join(closes, " ")
		cmd.Args = append([]string{"sh", "-c", script, cmd.Path}, cmd.Args[1:]...)
		cmd.Path, cmd.ExtraFiles = "/bin/sh", files
	}
	return closeAll, nil
}

// podCgroupParent is the directory below the test's own cgroups that
// pods' cgroups are made in: the jail's parent, which jail.Cgroup.Remove
// insists on.
const podCgroupParent = "boxkite"

// podCgroups finds the test's cgroups and prepares the parent of pods'
// cgroups there (jail.Cgroups.Prepare; on cgroup v2 that may move the
// test process to a leaf of its cgroup, as the local driver's tests do).
func podCgroups() (*jail.Cgroups, error) {
	cgs, err := jail.DetectCgroups("/")
	if err != nil {
		return nil, fmt.Errorf("pod cgroups: %w", err)
	}
	if err := cgs.Prepare(); err != nil {
		return nil, fmt.Errorf("pod cgroups: %w", err)
	}
	return cgs, nil
}

// removePodCgroupParents removes the parents of pods' cgroups once
// nothing is below them (a rmdir fails while anything is: another
// kubelet's pod, a local driver's sandbox), as the local driver's
// clean-up does.
func removePodCgroupParents(cgs *jail.Cgroups) {
	parents := cgs.Parents()
	for _, own := range cgs.Own().Dirs {
		if p := filepath.Join(own, podCgroupParent); !slices.Contains(parents, p) {
			parents = append(parents, p)
		}
	}
	for _, p := range parents {
		_ = syscall.Rmdir(p)
	}
}

// newPodCgroup makes the cgroup of the pod with uid, with limits lim, in
// every hierarchy the jail makes sandboxes' in and in every one the
// sidecar reads its use from (Cgroups.Own): on a v1 host with cpuacct
// mounted apart from cpu, the jail makes none in cpuacct's, where the
// CPU time is.
func newPodCgroup(cgs *jail.Cgroups, uid string, lim jail.Limits) (jail.Cgroup, error) {
	name := "kubetest-" + uid
	var (
		cg  jail.Cgroup
		err error
	)
	// A local driver's clean-up may remove the shared parent between its
	// making and the pod's directory's: try again.
	for range 3 {
		if cg, err = cgs.Create(name, lim); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return jail.Cgroup{}, fmt.Errorf("pod cgroup: %w", err)
	}
	for _, own := range cgs.Own().Dirs {
		dir := filepath.Join(own, podCgroupParent, name)
		if slices.Contains(cg.Dirs, dir) {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			_ = cg.Remove(context.Background())
			return jail.Cgroup{}, fmt.Errorf("pod cgroup: %w", err)
		}
		cg.Dirs = append(cg.Dirs, dir)
	}
	return cg, nil
}

// procIDs are who a pod's container runs as: -1 for the test's own ids
// (not root: it cannot switch) and, for fsGroup, for none.
type procIDs struct{ uid, gid, fsGroup int }

// podIDs reads the container's runAsUser and runAsGroup (the pod's when
// the container sets none) and the pod's fsGroup.
func podIDs(pod *corev1.Pod) procIDs {
	ids := procIDs{-1, -1, -1}
	if os.Geteuid() != 0 {
		return ids
	}
	psc, sc := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if u := cmp.Or(sc.RunAsUser, psc.RunAsUser); u != nil {
		ids.uid, ids.gid = int(*u), int(*u)
		if g := cmp.Or(sc.RunAsGroup, psc.RunAsGroup); g != nil {
			ids.gid = int(*g)
		}
		if psc.FSGroup != nil {
			ids.fsGroup = int(*psc.FSGroup)
		}
	}
	return ids
}

// claimName is the PersistentVolumeClaim pod's volume name stands for,
// "" when it is not one.
func claimName(pod *corev1.Pod, name string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// volume makes the host directory of the pod volume name.
func (k *Kubelet) volume(pod *corev1.Pod, name, host string, ids procIDs) error {
	if err := os.MkdirAll(host, 0o700); err != nil {
		return err
	}
	chown := func(path string) error {
		if ids.uid < 0 {
			return nil
		}
		return os.Chown(path, ids.uid, ids.gid)
	}
	if err := chown(filepath.Dir(host)); err != nil {
		return err
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name != name || v.Secret == nil {
			continue
		}
		if err := k.secretFiles(v.Secret, host, ids); err != nil {
			return fmt.Errorf("volume %s: %w", name, err)
		}
	}
	return chown(host)
}

// secretFiles writes the files of a Secret volume into dir as a kubelet
// does (Kubelet).
func (k *Kubelet) secretFiles(vs *corev1.SecretVolumeSource, dir string, ids procIDs) error {
	sec, err := k.client.CoreV1().Secrets(k.ns).Get(context.Background(), vs.SecretName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	mode := int32(0o644)
	if vs.DefaultMode != nil {
		mode = *vs.DefaultMode
	}
	items := vs.Items
	if len(items) == 0 {
		for key := range sec.Data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	for _, it := range items {
		data, ok := sec.Data[it.Key]
		if !ok {
			return fmt.Errorf("secret %s has no key %s", vs.SecretName, it.Key)
		}
		m := cmp.Or(it.Mode, &mode)
		f := filepath.Join(dir, it.Path)
		if err := os.WriteFile(f, data, os.FileMode(*m)); err != nil {
			return err
		}
		switch {
		case ids.uid < 0: // not root: the test's own files
		case ids.fsGroup >= 0:
			// A read-only volume's files get group read, and the fsGroup.
			if err := os.Chown(f, 0, ids.fsGroup); err != nil {
				return err
			}
			if err := os.Chmod(f, os.FileMode(*m|0o440)); err != nil {
				return err
			}
		default:
			if err := os.Chown(f, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// setStatus reports the pod's phase (and IP) to the API server.
func (k *Kubelet) setStatus(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, ip, msg string) {
	for ctx.Err() == nil {
		cur, err := k.client.CoreV1().Pods(k.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || cur.UID != pod.UID {
			return // deleted
		}
		now := metav1.Now()
		ready := corev1.ConditionFalse
		if phase == corev1.PodRunning {
			ready = corev1.ConditionTrue
		}
		cur.Status.Phase, cur.Status.Message, cur.Status.Reason = phase, msg, ""
		if msg == deadlineMessage {
			cur.Status.Reason = "DeadlineExceeded"
		}
		if cur.Status.StartTime == nil || phase == corev1.PodRunning {
			cur.Status.StartTime = &now
		}
		if ip != "" {
			cur.Status.PodIP, cur.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
			cur.Status.HostIP, cur.Status.HostIPs = "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
		}
		cur.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
		}
		cs := corev1.ContainerStatus{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image, Ready: ready == corev1.ConditionTrue}
		if phase == corev1.PodRunning {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
			cs.Started = ptr(true)
		} else {
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Message: msg, FinishedAt: now}
		}
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		_, err = k.client.CoreV1().Pods(k.ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) {
			return
		}
	}
}

// waitTLS waits until addr completes a TLS handshake (the sidecar serves),
// the process exits, or a minute passes.
func waitTLS(ctx context.Context, addr string, exit <-chan struct{}) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // a readiness probe; the driver pins
	}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := hc.Get("https://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exit:
			return fmt.Errorf("the container exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s: %v", addr, err)
		}
	}
}

// kill ends the pod's process group and waits for it, then removes its
// cgroup, killing whatever of the pod's is left there.
func (p *podProc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exit
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.cg.Remove(ctx); err != nil {
		p.logf("kubetest kubelet: pod %s: %v", p.name, err)
	}
	os.RemoveAll(p.dir)
}

func (p *podProc) killed() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func ptr[T any](v T) *T { return &v }
