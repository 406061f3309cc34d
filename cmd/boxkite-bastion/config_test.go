package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envFunc(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*options) bool
		wantErr string
	}{
		{"defaults", []string{"--server", "http://cp:8090/"}, nil, func(o *options) bool {
			return o.listen == ":2222" && o.server == "http://cp:8090" && o.maxPerSource == 10 && o.maxStartups == 100 && o.loginTimeout == 30*time.Second && o.hostKey == ""
		}, ""},
		{"env", nil, map[string]string{
			"BOXKITE_BASTION_SERVER": "https://cp", "BOXKITE_BASTION_LISTEN": "127.0.0.1:22", "BOXKITE_BASTION_HOST_KEY": "/k",
			"BOXKITE_BASTION_MAX_PER_SOURCE": "3", "BOXKITE_BASTION_LOGIN_TIMEOUT": "5s", "BOXKITE_BASTION_MAX_STARTUPS": "7",
		}, func(o *options) bool {
			return o.server == "https://cp" && o.listen == "127.0.0.1:22" && o.hostKey == "/k" && o.maxPerSource == 3 && o.maxStartups == 7 && o.loginTimeout == 5*time.Second
		}, ""},
		{"flag beats env", []string{"--server", "http://a"}, map[string]string{"BOXKITE_BASTION_SERVER": "http://b"}, func(o *options) bool {
			return o.server == "http://a"
		}, ""},
		{"no server", nil, nil, nil, "--server (or BOXKITE_BASTION_SERVER) is required"},
		{"not http", []string{"--server", "ftp://x"}, nil, nil, "is not an http(s) URL"},
		{"bad env", []string{"--server", "http://x"}, map[string]string{"BOXKITE_BASTION_MAX_PER_SOURCE": "many"}, nil, "BOXKITE_BASTION_MAX_PER_SOURCE"},
		{"zero per source", []string{"--server", "http://x", "--max-per-source", "0"}, nil, nil, "at least 1"},
		{"zero startups", []string{"--server", "http://x", "--max-startups", "0"}, nil, nil, "--max-startups must be at least 1"},
		{"argument", []string{"--server", "http://x", "extra"}, nil, nil, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseOptions(tt.args, envFunc(tt.env), &bytes.Buffer{})
			if tt.wantErr != "" {
				if _, ok := errors.AsType[*usageError](err); !ok || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(o) {
				t.Errorf("parseOptions = %+v, %v", o, err)
			}
		})
	}
}

func TestRunNeedsBastionKey(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--server", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"}, envFunc(nil), &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "the bastion key is required") {
		t.Errorf("run without a key = %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"--help"}, envFunc(nil), &stderr); code != 0 || !strings.Contains(stderr.String(), "BOXKITE_BASTION_HOST_KEY") {
		t.Errorf("--help = %d, %q", code, stderr.String())
	}
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := strings.Repeat("k", 40)
	write := func(name string, mode os.FileMode, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := write("good", 0o600, key+"\n")
	// Readable by a group the bastion is not in; its own group (a
	// Kubernetes Secret mounted with fsGroup) may read.
	group := write("group", 0o640, key)
	if err := os.Chown(group, -1, os.Getegid()+1); err != nil {
		t.Fatalf("chown: %v (the test runs as root in CI)", err)
	}
	tests := []struct {
		name, file, env, want, wantErr string
	}{
		{"file", good, "", key, ""},
		{"own group", write("own-group", 0o440, key), "", key, ""},
		{"env", "", key, "", bastionKeyEnv + " is set"},
		{"neither", "", "", "", "the bastion key is required"},
		{"both", good, key, "", bastionKeyEnv + " is set"},
		{"group readable", group, "", "", "chmod 600"},
		{"world readable", write("world", 0o604, key), "", "", "readable by others"},
		{"short", write("short", 0o600, "abc"), "", "", "at least 32"},
		{"directory", dir, "", "", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveKey(&options{keyFile: tt.file}, envFunc(map[string]string{bastionKeyEnv: tt.env}))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("resolveKey = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("resolveKey = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := resolveKey(&options{keyFile: filepath.Join(dir, "missing")}, envFunc(nil)); err == nil {
		t.Error("a missing key file was accepted")
	}
}
