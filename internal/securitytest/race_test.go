package securitytest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// Issue 17, finding 1 (the file side): the sidecar resolved a path, checked
// it, then opened, created or renamed by path, so an agent swapping a
// directory for a symlink between the check and the use
// (renameat2(RENAME_EXCHANGE) in a loop) made it read and write outside the
// roots. These tests first prove that the racer they run does win against
// an opener built that way, inside the same sandbox and within the time
// budget, and only then that the real routes, driven through the server,
// never lose to it in the same budget.

// raceBudget is how long the real routes are hammered while the racer
// runs.
const raceBudget = 9 * time.Second

// naiveBudget is how long the path-based opener may take to lose: it ends
// at its first loss, in milliseconds on a quiet machine, but the racer and
// it may take long to interleave on a loaded one (CI's two cores).
const naiveBudget = time.Minute

// racerEnv makes the test binary, uploaded into a sandbox, the racer or the
// deliberately path-based opener instead of the test suite (TestMain).
const racerEnv = "BOXKITE_RACER"

// racerPath is where the test binary goes in the sandbox.
const racerPath = "/workspace/.racer"

// inside is what the files the races are about hold inside the roots.
const inside = "inside\n"

// runRacer is the test binary's life inside a sandbox, selected by
// $BOXKITE_RACER: "swap A B" exchanges A and B forever; "naive-read ROOT
// REL" and "naive-write ROOT RELDIR OUTSIDE" are the path-based opener.
func runRacer(mode string, args []string) int {
	switch {
	case mode == "swap" && len(args) == 2:
		for {
			if err := unix.Renameat2(unix.AT_FDCWD, args[0], unix.AT_FDCWD, args[1], unix.RENAME_EXCHANGE); err != nil {
				fmt.Fprintf(os.Stderr, "swap %s %s: %v\n", args[0], args[1], err)
				return 1
			}
		}
	case mode == "naive-read" && len(args) == 2:
		return naiveRead(args[0], args[1])
	case mode == "naive-write" && len(args) == 3:
		return naiveWrite(args[0], args[1], args[2])
	}
	fmt.Fprintf(os.Stderr, "racer: bad mode %q %q\n", mode, args)
	return 2
}

// naiveRead is the old sidecar's read: resolve every symlink of
// root/rel, check the result lies in root, then open it by path with
// O_NOFOLLOW, which guards only the last component. It reports the first
// read that got something else than the file inside root.
func naiveRead(root, rel string) int {
	start := time.Now()
	tries := 0
	for time.Since(start) < naiveBudget {
		tries++
		real, err := filepath.EvalSymlinks(filepath.Join(root, rel))
		if err != nil || !strings.HasPrefix(real, root+"/") {
			continue
		}
		f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(f, 64))
		f.Close()
		if string(b) != inside {
			fmt.Printf("escaped after %d tries in %v: read %q\n", tries, time.Since(start).Round(time.Millisecond), b)
			return 0
		}
	}
	fmt.Printf("held for %d tries\n", tries)
	return 3
}

// naiveWrite is the old sidecar's create: resolve root/reldir, check it
// lies in root, then create a new file in it by path. It reports the first
// file that landed in outside instead.
func naiveWrite(root, reldir, outside string) int {
	start := time.Now()
	tries := 0
	for time.Since(start) < naiveBudget {
		tries++
		real, err := filepath.EvalSymlinks(filepath.Join(root, reldir))
		if err != nil || !strings.HasPrefix(real, root+"/") {
			continue
		}
		name := fmt.Sprintf("naive-%d", tries)
		f, err := os.OpenFile(filepath.Join(real, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			continue
		}
		f.Close()
		if _, err := os.Lstat(filepath.Join(outside, name)); err == nil {
			_ = os.Remove(filepath.Join(outside, name))
			fmt.Printf("escaped after %d tries in %v: created %s\n", tries, time.Since(start).Round(time.Millisecond), filepath.Join(outside, name))
			return 0
		}
	}
	fmt.Printf("held for %d tries\n", tries)
	return 3
}

// raceSandbox is a sandbox with the test binary uploaded as its racer.
type raceSandbox struct {
	x  *suite
	id string
}

func newRaceSandbox(t *testing.T) raceSandbox {
	t.Helper()
	x := newSuite(t)
	rs := raceSandbox{x: x, id: x.sandbox(api.CreateSandboxRequest{Label: "racer"})}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := x.c.UploadFile(ctx, rs.id, racerPath, f); err != nil {
		t.Fatalf("upload the racer: %v", err)
	}
	rs.sh(t, "chmod 755 "+racerPath)
	return rs
}

// sh runs a shell command that must succeed and returns its stdout.
func (rs raceSandbox) sh(t *testing.T, command string) string {
	t.Helper()
	res := rs.x.run(rs.id, "set -e\n"+command)
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d: %s%s", command, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// swap starts a racer exchanging the paths a and b until the test ends.
func (rs raceSandbox) swap(t *testing.T, a, b string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := rs.x.c.StartProcess(ctx, rs.id, api.ProcessStartRequest{
		Command:           fmt.Sprintf("%s=swap exec %s %s %s", racerEnv, racerPath, a, b),
		MaxRuntimeSeconds: 300,
	})
	if err != nil {
		t.Fatalf("start the racer: %v", err)
	}
	t.Cleanup(func() { _, _ = rs.x.c.StopProcess(context.Background(), rs.id, p.ProcessID) })
}

// proveRacerWins runs the path-based opener in the sandbox and fails the
// test unless the racer beats it within the budget: a race test whose
// racer cannot win proves nothing.
func (rs raceSandbox) proveRacerWins(t *testing.T, args string) {
	t.Helper()
	res, err := rs.x.exec(rs.id, api.ExecRequest{Command: racerEnv + "=" + args, Timeout: int(naiveBudget/time.Second) + 20})
	if err != nil {
		t.Fatalf("run the path-based opener: %v", err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "escaped") {
		t.Fatalf("the racer did not beat a path-based opener within %v (exit %d: %s%s); the race test would prove nothing",
			naiveBudget, res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("path-based opener: %s", strings.TrimSpace(res.Stdout))
}

// tally counts, per route, the answers that succeeded and the escapes.
type tally struct {
	mu      sync.Mutex
	ok      map[string]int
	calls   map[string]int
	escapes []string
}

func (tl *tally) record(route string, ok bool, escape string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.calls[route]++
	if ok {
		tl.ok[route]++
	}
	if escape != "" && len(tl.escapes) < 20 {
		tl.escapes = append(tl.escapes, route+": "+escape)
	}
}

// hammer calls every route in turn from several workers for the budget.
// A route returns whether it succeeded and, if what it did escaped the
// roots, how.
func hammer(t *testing.T, routes map[string]func(ctx context.Context, n int) (bool, string)) *tally {
	t.Helper()
	tl := &tally{ok: map[string]int{}, calls: map[string]int{}}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range routes {
			if !yield(name) {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), raceBudget)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := w; ctx.Err() == nil; n += 4 {
				name := names[n%len(names)]
				ok, escape := routes[name](ctx, n)
				if ctx.Err() != nil && !ok && escape == "" {
					return // cut by the budget
				}
				tl.record(name, ok, escape)
			}
		})
	}
	wg.Wait()
	for _, name := range names {
		t.Logf("%-14s %5d calls, %5d succeeded", name, tl.calls[name], tl.ok[name])
		if tl.ok[name] == 0 {
			t.Errorf("%s never succeeded while racing (%d calls): the test did not exercise it", name, tl.calls[name])
		}
	}
	if len(tl.escapes) > 0 {
		t.Errorf("the routes lost the race %d+ times:\n%s", len(tl.escapes), strings.Join(tl.escapes, "\n"))
	}
	return tl
}

// TestFileReadsWinTheSymlinkRace: while a/ and a symlink to /etc swap
// places, reading a/passwd through view, raw download, archive download,
// ls, glob, grep and present_files only ever sees the file inside.
func TestFileReadsWinTheSymlinkRace(t *testing.T) {
	rs := newRaceSandbox(t)
	rs.sh(t, `mkdir -p /workspace/race/r/a && printf 'inside\n' > /workspace/race/r/a/passwd && ln -s /etc /workspace/race/r/b`)
	rs.swap(t, "/workspace/race/r/a", "/workspace/race/r/b")
	rs.proveRacerWins(t, "naive-read "+racerPath+" /workspace race/r/a/passwd")

	x, id := rs.x, rs.id
	const file, dir = "race/r/a/passwd", "race/r/a"
	onlyPasswd := func(paths []string) string {
		for _, p := range paths {
			if path.Base(strings.TrimSuffix(p, "/")) != "passwd" {
				return "listed " + p
			}
		}
		return ""
	}
	hammer(t, map[string]func(context.Context, int) (bool, string){
		"view": func(ctx context.Context, _ int) (bool, string) {
			res, err := x.c.View(ctx, id, api.ViewRequest{Path: file})
			if err != nil {
				return false, ""
			}
			return true, differs(res.Content)
		},
		"raw get": func(ctx context.Context, _ int) (bool, string) {
			d, err := x.c.DownloadFile(ctx, id, file)
			if err != nil {
				return false, ""
			}
			defer d.Close()
			b, err := io.ReadAll(d)
			if err != nil {
				return false, "" // cut short, by the budget's end: not an answer
			}
			return true, differs(string(b))
		},
		"archive get": func(ctx context.Context, _ int) (bool, string) {
			d, err := x.c.DownloadArchive(ctx, id, dir)
			if err != nil {
				return false, ""
			}
			defer d.Close()
			b, err := io.ReadAll(d)
			if err != nil {
				return false, ""
			}
			return true, tarOnlyInside(b)
		},
		"ls": func(ctx context.Context, _ int) (bool, string) {
			res, err := x.c.Ls(ctx, id, api.LsRequest{Path: dir})
			if err != nil {
				return false, ""
			}
			var ps []string
			for _, e := range res.Entries {
				ps = append(ps, e.Path)
			}
			return true, onlyPasswd(ps)
		},
		"glob": func(ctx context.Context, _ int) (bool, string) {
			res, err := x.c.Glob(ctx, id, api.GlobRequest{Path: dir, Pattern: "*"})
			if err != nil {
				return false, ""
			}
			var ps []string
			for _, m := range res.Matches {
				ps = append(ps, m.Path)
			}
			return len(ps) > 0, onlyPasswd(ps)
		},
		"grep": func(ctx context.Context, _ int) (bool, string) {
			res, err := x.c.Grep(ctx, id, api.GrepRequest{Path: dir, Pattern: "."})
			if err != nil {
				return false, ""
			}
			for _, m := range res.Matches {
				if m.Text != "inside" || path.Base(m.Path) != "passwd" {
					return true, fmt.Sprintf("matched %s: %q", m.Path, m.Text)
				}
			}
			return len(res.Matches) > 0, ""
		},
		"present": func(ctx context.Context, _ int) (bool, string) {
			res, err := x.c.PresentFiles(ctx, id, api.PresentFilesRequest{Filepaths: []string{file}})
			if err != nil || len(res.Files) == 0 {
				return false, ""
			}
			if res.Files[0].Size != int64(len(inside)) {
				return true, fmt.Sprintf("copied %d bytes to the outputs", res.Files[0].Size)
			}
			return true, ""
		},
	})
}

// differs says how content differs from the file inside, or "".
func differs(content string) string {
	if content == inside {
		return ""
	}
	return fmt.Sprintf("read %.60q", content)
}

// tarOnlyInside says how the archive b holds anything but passwd with the
// content inside, or "".
func tarOnlyInside(b []byte) string {
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return "a broken archive: " + err.Error()
		}
		if hdr.Name != "passwd" {
			return "archived " + hdr.Name
		}
		body, _ := io.ReadAll(tr)
		if s := differs(string(body)); s != "" {
			return s
		}
	}
}

// TestFileWritesWinTheSymlinkRace: while a/ and a symlink to /dev/shm (a
// directory outside the roots that the sandbox user may write) swap
// places, writing into a/ through raw upload, file create, archive upload
// and str_replace (each a temp file renamed into place) never creates or
// replaces anything outside the roots, in the jail or on the host.
func TestFileWritesWinTheSymlinkRace(t *testing.T) {
	rs := newRaceSandbox(t)
	rs.sh(t, `mkdir -p /workspace/race/w/a && ln -s /dev/shm /workspace/race/w/b
printf 'inside\n' > /workspace/race/w/a/edit.txt && printf 'inside\n' > /dev/shm/edit.txt`)
	shmBefore := rs.sh(t, "ls -A /dev/shm; stat -c %i /dev/shm/edit.txt")
	runDir := filepath.Join(rs.x.host(rs.id).dir, "run")
	runBefore := dirNames(t, runDir)
	rs.swap(t, "/workspace/race/w/a", "/workspace/race/w/b")
	rs.proveRacerWins(t, "naive-write "+racerPath+" /workspace race/w/a /dev/shm")

	x, id := rs.x, rs.id
	const dir = "race/w/a"
	hammer(t, map[string]func(context.Context, int) (bool, string){
		"raw put": func(ctx context.Context, n int) (bool, string) {
			_, err := x.c.UploadFile(ctx, id, fmt.Sprintf("%s/u-%d", dir, n), strings.NewReader("x"))
			return err == nil, ""
		},
		"create": func(ctx context.Context, n int) (bool, string) {
			_, err := x.c.WriteFile(ctx, id, api.FileCreateRequest{Path: fmt.Sprintf("%s/c-%d", dir, n), Content: "x"})
			return err == nil, ""
		},
		"archive put": func(ctx context.Context, n int) (bool, string) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			_ = tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("x-%d", n), Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte("x"))
			_ = tw.Close()
			_, err := x.c.UploadArchive(ctx, id, dir, &buf)
			return err == nil, ""
		},
		"str-replace": func(ctx context.Context, _ int) (bool, string) {
			res, err := x.c.StrReplace(ctx, id, api.StrReplaceRequest{Path: dir + "/edit.txt", OldStr: "inside", NewStr: "inside"})
			return err == nil && res.Replaced, ""
		},
	})
	if after := rs.sh(t, "ls -A /dev/shm; stat -c %i /dev/shm/edit.txt"); after != shmBefore {
		t.Errorf("/dev/shm changed while racing (an escaped write):\nbefore %q\nafter  %q", shmBefore, after)
	}
	if after := dirNames(t, runDir); !slices.Equal(after, runBefore) {
		t.Errorf("the sandbox's run directory on the host changed while racing: before %v, after %v", runBefore, after)
	}
}

// dirNames lists the names in the host directory dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
