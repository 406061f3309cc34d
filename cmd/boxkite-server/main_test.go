package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
	"github.com/boxkite/boxkite/server/storagesync"
)

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestOptionPrecedence(t *testing.T) {
	t.Parallel()
	defaultStorage := storageOpts{
		prefix: "boxkite", azureAuth: "connection-string", ignore: strings.Join(storagesync.DefaultIgnore, ","),
		interval: storagesync.DefaultInterval, finalTimeout: storagesync.DefaultFinalTimeout, bandwidthMiB: storagesync.DefaultBandwidth >> 20,
		journalMaxDirs: storagesync.DefaultJournalMaxDirs,
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "server.toml")
	if err := os.WriteFile(cfgFile, []byte(`
listen = "127.0.0.1:1111"
log_level = "debug"
max-count = 3
max_storage_gb = 7.5
reaper_interval = "5s"
state_dir = "/from/file"
host-users = true
volume-storage-class = "fast"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want options
	}{
		{
			name: "defaults",
			env:  map[string]string{"BOXKITE_HOME": "/bh"},
			want: options{
				listen: "127.0.0.1:8090", db: "sqlite:/bh/server/boxkite.db", driver: "local", stateDir: "/bh/server",
				logLevel: "info", defaultLifetime: 30 * time.Minute, maxLifetime: 24 * time.Hour, maxStorageGB: 20, maxVolumeGB: 100, maxCount: 10,
				reaperInterval: time.Second, warmPool: defaultWarmPool, preparedPool: defaultPreparedPool,
				namespace: kube.DefaultNamespace, image: kube.DefaultImage, pullPolicy: "IfNotPresent", console: true, clones: local.ClonesAuto, maxPausedAge: server.DefaultMaxPausedAge,
				storage: defaultStorage, takeoverFlush: server.DefaultTakeoverFlush,
			},
		},
		{
			name: "file over defaults, env over file, flags over env",
			args: []string{"--config", cfgFile, "--listen", "127.0.0.1:3333"},
			env: map[string]string{
				"BOXKITE_SERVER_LISTEN":    "127.0.0.1:2222",
				"BOXKITE_SERVER_MAX_COUNT": "4",
				"BOXKITE_SERVER_WARM_POOL": "0",
				"BOXKITE_HOME":             "/ignored",
			},
			want: options{
				listen: "127.0.0.1:3333", db: "sqlite:/from/file/boxkite.db", driver: "local", stateDir: "/from/file",
				configFile: cfgFile, logLevel: "debug", defaultLifetime: 30 * time.Minute, maxLifetime: 24 * time.Hour,
				maxStorageGB: 7.5, maxVolumeGB: 100, maxCount: 4, reaperInterval: 5 * time.Second, preparedPool: defaultPreparedPool,
				namespace: kube.DefaultNamespace, image: kube.DefaultImage, pullPolicy: "IfNotPresent", hostUsers: true, volumeClass: "fast", console: true, clones: local.ClonesAuto, maxPausedAge: server.DefaultMaxPausedAge,
				storage: defaultStorage, takeoverFlush: server.DefaultTakeoverFlush,
			},
		},
		{
			name: "config file named by env",
			env:  map[string]string{"BOXKITE_SERVER_CONFIG": cfgFile, "BOXKITE_SERVER_DB": "sqlite:/x.db"},
			want: options{
				listen: "127.0.0.1:1111", db: "sqlite:/x.db", driver: "local", stateDir: "/from/file",
				configFile: cfgFile, logLevel: "debug", defaultLifetime: 30 * time.Minute, maxLifetime: 24 * time.Hour,
				maxStorageGB: 7.5, maxVolumeGB: 100, maxCount: 3, reaperInterval: 5 * time.Second, warmPool: defaultWarmPool, preparedPool: defaultPreparedPool,
				namespace: kube.DefaultNamespace, image: kube.DefaultImage, pullPolicy: "IfNotPresent", hostUsers: true, volumeClass: "fast", console: true, clones: local.ClonesAuto, maxPausedAge: server.DefaultMaxPausedAge,
				storage: defaultStorage, takeoverFlush: server.DefaultTakeoverFlush,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOptions(tt.args, envFunc(tt.env), io.Discard)
			if err != nil {
				t.Fatalf("parseOptions: %v", err)
			}
			if diff := cmp.Diff(tt.want, *got, cmp.AllowUnexported(options{}, storageOpts{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("listne = \"x\"\n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"unknown file key", []string{"--config", bad}, nil, `unknown setting "listne"`},
		{"bad env value", nil, map[string]string{"BOXKITE_SERVER_MAX_COUNT": "many"}, "BOXKITE_SERVER_MAX_COUNT"},
		{"bad log level", []string{"--log-level", "loud"}, nil, "log level"},
		{"stray argument", []string{"serve"}, nil, "unexpected argument"},
		{"missing file", []string{"--config", filepath.Join(dir, "none.toml")}, nil, "read config file"},
		{"unknown max size", []string{"--max-size", "huge"}, nil, "max size"},
		{"negative limit", nil, map[string]string{"BOXKITE_SERVER_MAX_CONCURRENT_PER_ACCOUNT": "-1"}, "must not be negative"},
		{"negative warm pool", []string{"--warm-pool", "-1"}, nil, "warm pool -1"},
		{"profiling on every interface", []string{"--admin-listen", "0.0.0.0:6060"}, nil, "not a loopback address"},
		{"profiling on a routable address", []string{"--admin-listen", "10.1.2.3:6060"}, nil, "not a loopback address"},
		{"profiling on a name", nil, map[string]string{"BOXKITE_SERVER_ADMIN_LISTEN": "example.com:6060"}, "not a loopback address"},
		{"profiling without a port", []string{"--admin-listen", "127.0.0.1"}, nil, "want HOST:PORT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseOptions(tt.args, envFunc(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseOptions error = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestHelpShowsDefaultsAndEnv(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, envFunc(nil), &out); code != 0 {
		t.Fatalf("--help exit code %d", code)
	}
	for _, want := range []string{
		"BOXKITE_SERVER_LISTEN", `(default "127.0.0.1:8090")`, "BOXKITE_SERVER_STATE_DIR", "BOXKITE_BOOTSTRAP_API_KEY",
		"BOXKITE_SERVER_MAX_CONCURRENT_PER_ACCOUNT", "BOXKITE_SERVER_RATE_OPS", "BOXKITE_JWT_SECRET",
		"BOXKITE_SERVER_WARM_POOL", "BOXKITE_BASTION_KEY",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name     string
		args     []string
		code     int
		wantText []string
	}{
		{"kube outside a cluster", []string{"--driver", "kube"}, 1, []string{"in-cluster config", "hint: pass --kubeconfig"}},
		{"kube bad kubeconfig", []string{"--driver", "kube", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, []string{"load kubeconfig", "hint: pass --kubeconfig"}},
		{"bad image pull secret", []string{"--driver", "kube", "--image-pull-secrets", "regcred, Reg_Cred"}, 2, []string{`"Reg_Cred" is not a Secret name`, "hint: give the names"}},
		{"bad image pull policy", []string{"--driver", "kube", "--image-pull-policy", "always"}, 2, []string{`image pull policy "always": want Always, IfNotPresent or Never`}},
		{"bad control plane labels", []string{"--driver", "kube", "--control-plane-labels", "app=boxkite,=x"}, 2, []string{"--control-plane-labels", "hint: give the server pods' labels"}},
		{"unknown driver", []string{"--driver", "docker"}, 2, []string{`driver "docker": want local or kube`}},
		{"missing sidecar", []string{"--sidecar", "/nonexistent/boxkite-sidecar"}, 1, []string{"sidecar", "hint: install it"}},
		{"port taken", []string{"--listen", taken.Addr().String(), "--sidecar", "/bin/true"}, 1, []string{"address already in use", "hint:"}},
		{"usage", []string{"--nope"}, 2, []string{"flag provided but not defined"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append([]string{"--state-dir", t.TempDir()}, tt.args...)
			code := run(context.Background(), args, envFunc(nil), &out)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, out.String())
			}
			for _, w := range tt.wantText {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestServeAndStop starts the real program on a free port with a
// bootstrap key, uses the API, and stops it as SIGTERM would.
func TestServeAndStop(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	key := model.NewAPIKey()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keyFile := filepath.Join(t.TempDir(), "bootstrap.key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out lockedbuf.Buffer
	done := make(chan int, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--state-dir", state, "--sidecar", "/bin/true", "--bootstrap-key-file", keyFile}
		done <- run(ctx, args, envFunc(nil), &out)
	}()
	// However the test ends, the server stops before its state directory
	// is removed: a server still running holds the pool's disks busy.
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(2 * time.Minute):
			t.Error("the server did not stop within 2 minutes of its context's end")
		}
	})
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var base string
	// A bound on the server's start, not a timing: under a loaded CI machine
	// (load 30+) the start with its pool's mkfs took more than 10 s.
	deadline := time.Now().Add(2 * time.Minute)
	for base == "" {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("exited with %d before listening:\n%s", code, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(state, "boxkite.db")); err != nil {
		t.Errorf("database not in the state dir: %v", err)
	}
	// Profiling answers on the admin listener only.
	admin := regexp.MustCompile(`profiling \(net/http/pprof\) on (http://127\.0\.0\.1:\d+)/debug/pprof/`).FindStringSubmatch(out.String())
	if admin == nil {
		t.Fatalf("no profiling line:\n%s", out.String())
	}
	for _, tt := range []struct {
		url    string
		status int
		body   string
	}{
		{admin[1] + "/debug/pprof/goroutine?debug=1", 200, "goroutine profile:"},
		{admin[1] + "/v1/sandboxes", 404, ""},
		{base + "/debug/pprof/goroutine?debug=1", 404, ""},
	} {
		resp, err := http.Get(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.body) {
			t.Errorf("GET %s = %d %.100q, want %d with %q", tt.url, resp.StatusCode, b, tt.status, tt.body)
		}
	}
	for _, tt := range []struct {
		path, key string
		status    int
	}{
		{"/health/ready", "", 200},
		{"/v1/sandboxes", key, 200},
		{"/v1/sandboxes", model.NewAPIKey(), 401},
	} {
		req, _ := http.NewRequest("GET", base+tt.path, nil)
		if tt.key != "" {
			req.Header.Set("Authorization", "Bearer "+tt.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET %s = %d, want %d", tt.path, resp.StatusCode, tt.status)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after stop = %d, want 0:\n%s", code, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("did not stop")
	}
}

// A SQLite database one server holds is refused to a second, with a hint:
// the first server's lookup cache would not see the second's writes.
func TestRunDatabaseInUse(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "boxkite.db")
	held, err := sqlstore.Open(t.Context(), "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var out bytes.Buffer
	args := []string{"--state-dir", t.TempDir(), "--db", "sqlite:" + db, "--listen", "127.0.0.1:0", "--sidecar", "/bin/true"}
	if code := run(context.Background(), args, envFunc(nil), &out); code != 1 {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, out.String())
	}
	for _, w := range []string{"in use by another process", "hint: another boxkite-server is using this database"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, out.String())
		}
	}
}
