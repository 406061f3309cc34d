//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/server/internal/unixsock"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"
)

// state is StateDir/sandboxes/<id>/state.json. It holds the token so that a
// restarted driver's List can return whole endpoints; it is 0600 in a 0700
// directory, and whoever can read it could read the socket anyway.
type state struct {
	PID       int    `json:"pid"`        // the jail's init, as the host sees it; 0 before it starts
	StartTime uint64 `json:"start_time"` // of PID, from /proc/<pid>/stat, against pid reuse
	Socket    string `json:"socket"`     // host path of the sidecar's unix socket
	Token     string `json:"token"`

	Cgroup jail.Cgroup `json:"cgroup,omitzero"` // its directories, made under the creating driver's cgroups

	// HostIDBase is the first host id of the sandbox's own id range (as
	// root); 0 for a sandbox started before per-sandbox ranges, which maps
	// Config.LegacyIDBase, or by a driver that is not root.
	HostIDBase int `json:"host_id_base,omitempty"`

	// Volumes are the ids of the volumes it mounts, whose filesystems are
	// flushed with its own (storage.go).
	Volumes []string `json:"volumes,omitempty"`

	// Paused is the mode the sandbox is paused in (pause.go), "" while it
	// runs. The storage watch never thaws a paused sandbox.
	Paused string `json:"paused,omitempty"`

	// Jail and Limits are the jail's spec and cgroup limits as created,
	// to start it again after a filesystem pause (its paths and host id
	// range are made anew then).
	Jail   *jail.Spec  `json:"jail,omitempty"`
	Limits jail.Limits `json:"limits,omitzero"`
}

const stateFile = "state.json"

func writeState(dir string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func readState(dir string) (state, error) {
	var st state
	// Plain system calls, not os.ReadFile's poller round: every host
	// capacity reading reads each sandbox's and pool member's state file.
	b, err := jail.ReadSmallFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	return st, nil
}

// procStat returns the start time and state letter of pid from /proc/<pid>/stat.
func procStat(pid int) (start uint64, stateLetter byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name may hold spaces and parentheses; fields resume after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return start, fields[0][0], nil
}

func startTime(pid int) (uint64, error) {
	s, _, err := procStat(pid)
	if err != nil {
		return 0, fmt.Errorf("read start time of %d: %w", pid, err)
	}
	return s, nil
}

// alive reports whether the jail's init still runs: same pid, same start
// time, not a zombie.
func alive(st state) bool {
	start, letter, err := procStat(st.PID)
	return err == nil && start == st.StartTime && letter != 'Z' && letter != 'X'
}

// killPID sends SIGKILL through a pidfd, so a pid reused between the
// liveness check and the signal is never hit, and returns the pidfd to wait
// on (-1 when the process is already gone).
func killPID(st state) (int, error) {
	fd, err := unix.PidfdOpen(st.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open pidfd of %d: %w", st.PID, err)
	}
	if !alive(st) { // the pid now names another process, or a zombie
		_ = unix.Close(fd)
		return -1, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("kill %d: %w", st.PID, err)
	}
	return fd, nil
}

// waitPidfd waits until the process behind fd has exited.
func waitPidfd(ctx context.Context, fd int) error {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 20)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for exit: %w", err)
		}
		if n > 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// removeAll removes dir. A driver that is not root may meet directories the
// agent made unwritable (chmod 0555), so it makes them writable and retries.
// os.RemoveAll itself never follows a symlink (it unlinks beneath
// directory descriptors).
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || os.Geteuid() == 0 {
		return err
	}
	makeWritable(dir)
	return os.RemoveAll(dir)
}

// maxTreeDepth bounds how deep makeWritable goes: it holds a descriptor
// per level.
const maxTreeDepth = 1024

// makeWritable gives dir and every directory below it mode 0700. The tree
// is a sandbox's, so it is walked by descriptors: each directory is opened
// beneath its parent with O_NOFOLLOW and changed through /proc/self/fd of
// that descriptor, never by a path the sandbox could swap for a symlink to
// the host's files meanwhile. Best effort: what cannot be changed is left
// for RemoveAll to report.
func makeWritable(dir string) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	chmodTree(fd, 0)
}

// chmodTree makes the directory held by the O_PATH descriptor fd, and
// those below it, mode 0700; it closes fd.
func chmodTree(fd, depth int) {
	defer unix.Close(fd)
	if unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), 0o700, 0) != nil || depth >= maxTreeDepth {
		return
	}
	rd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(rd), "")
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, name := range names {
		sub, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // not a directory, or a symlink: nothing to make writable
		}
		chmodTree(sub, depth+1)
	}
}

// unixClient is an HTTP client whose every request goes to one unix socket.
func unixClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return unixsock.Dial(ctx, &net.Dialer{}, socket)
		},
		DisableKeepAlives: true,
	}}
}

// waitHealthy polls GET /health with a short backoff until it answers 200,
// the jail exits (done closes) or timeout or ctx runs out. It asks with c,
// or with a client of its own that closes its connection when c is nil.
func waitHealthy(ctx context.Context, c *http.Client, ep model.Endpoint, timeout time.Duration, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if c == nil {
		c = unixClient(ep.Address)
	}
	var last error
	// A refused connect costs microseconds; polling often keeps Create fast.
	for wait := time.Millisecond; ; wait = min(2*wait, 5*time.Millisecond) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sidecar/health", nil)
		if err != nil {
			return fmt.Errorf("check health: %w", err)
		}
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-done:
			return errors.New("check health: sidecar exited")
		case <-ctx.Done():
			return fmt.Errorf("check health: %w (last: %v)", ctx.Err(), last)
		case <-time.After(wait):
		}
	}
}

// logTail returns the end of a sandbox's sidecar.log, formatted to follow an error.
func logTail(dir string) string {
	f, err := os.Open(filepath.Join(dir, "sidecar.log"))
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 2048
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	if s := strings.TrimSpace(string(b)); s != "" {
		return "\nsidecar log:\n" + s
	}
	return ""
}
