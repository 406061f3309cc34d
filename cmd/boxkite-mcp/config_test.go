package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadConfig(t *testing.T) {
	const hosted = "base_url = \"https://boxkite.example.com\"\napi_key = \"bxk_live_hosted\"\n"
	const local = "version = 1\nbase_url = \"http://127.0.0.1:8090\"\napi_key = \"bxk_live_local\"\n"
	tests := []struct {
		name     string
		files    map[string]string
		env      map[string]string
		want     *config
		wantErr  string
		wantHint string
	}{
		{
			name: "env",
			env:  map[string]string{"BOXKITE_BASE_URL": "https://b.example.com/", "BOXKITE_API_KEY": "bxk_live_env"},
			want: &config{BaseURL: "https://b.example.com", APIKey: "bxk_live_env", KeySource: "env BOXKITE_API_KEY", URLSource: "env BOXKITE_BASE_URL"},
		},
		{
			name:  "hosted file wins over local",
			files: map[string]string{"config.toml": hosted, "local.toml": local},
			want:  &config{BaseURL: "https://boxkite.example.com", APIKey: "bxk_live_hosted", KeySource: "file config.toml", URLSource: "file config.toml"},
		},
		{
			name:  "local file",
			files: map[string]string{"local.toml": local},
			want:  &config{BaseURL: "http://127.0.0.1:8090", APIKey: "bxk_live_local", KeySource: "file local.toml", URLSource: "file local.toml"},
		},
		{
			name:  "half hosted file falls back to local",
			files: map[string]string{"config.toml": "base_url = \"https://x.example.com\"\n", "local.toml": local},
			want:  &config{BaseURL: "http://127.0.0.1:8090", APIKey: "bxk_live_local", KeySource: "file local.toml", URLSource: "file local.toml"},
		},
		{
			name:  "env key over file",
			files: map[string]string{"local.toml": local},
			env:   map[string]string{"BOXKITE_API_KEY": "bxk_live_env"},
			want:  &config{BaseURL: "http://127.0.0.1:8090", APIKey: "bxk_live_env", KeySource: "env BOXKITE_API_KEY", URLSource: "file local.toml"},
		},
		{
			name:    "nothing",
			wantErr: "no boxkite server configured", wantHint: "boxkite up",
		},
		{
			name: "no key", env: map[string]string{"BOXKITE_BASE_URL": "https://b.example.com"},
			wantErr: "no API key for https://b.example.com", wantHint: "BOXKITE_API_KEY",
		},
		{
			name: "no url", env: map[string]string{"BOXKITE_API_KEY": "bxk_live_x"},
			wantErr: "no server URL", wantHint: "BOXKITE_BASE_URL",
		},
		{
			name: "plain http to a remote host", env: map[string]string{"BOXKITE_BASE_URL": "http://b.example.com", "BOXKITE_API_KEY": "k"},
			wantErr: "http is allowed only for localhost", wantHint: "https",
		},
		{
			name: "bad scheme", env: map[string]string{"BOXKITE_BASE_URL": "ftp://b", "BOXKITE_API_KEY": "k"},
			wantErr: "the scheme must be https",
		},
		{
			name: "broken file", files: map[string]string{"config.toml": "base_url = \n"},
			wantErr: "config.toml", wantHint: "fix or remove",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"BOXKITE_HOME": home}
			for k, v := range tc.env {
				env[k] = v
			}
			got, err := loadConfig(func(k string) string { return env[k] })
			if tc.wantErr != "" {
				var he *hintError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || tc.wantHint != "" && (!errors.As(err, &he) || !strings.Contains(he.hint, tc.wantHint)) {
					t.Fatalf("err = %v (%+v), want %q with hint %q", err, he, tc.wantErr, tc.wantHint)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.KeySource = strings.ReplaceAll(got.KeySource, home+string(filepath.Separator), "")
			got.URLSource = strings.ReplaceAll(got.URLSource, home+string(filepath.Separator), "")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunStartupErrors(t *testing.T) {
	home := t.TempDir()
	var out, errOut strings.Builder
	err := run(t.Context(), nil, func(k string) string { return map[string]string{"BOXKITE_HOME": home}[k] }, strings.NewReader(""), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no boxkite server configured") || out.Len() != 0 {
		t.Errorf("run without config: err %v, stdout %q", err, out.String())
	}
	if err := run(t.Context(), []string{"--bogus"}, os.Getenv, strings.NewReader(""), &out, &errOut); err == nil {
		t.Error("run --bogus succeeded")
	}
}

func FuzzCheckBaseURL(f *testing.F) {
	for _, s := range []string{"https://a.example.com", "http://localhost:8090", "http://[::1]:1", "http://10.0.0.1", "ftp://x", "", "http://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkBaseURL(s) != nil {
			return
		}
		if l := strings.ToLower(s); !strings.HasPrefix(l, "https://") && !strings.HasPrefix(l, "http://") {
			t.Errorf("accepted %q", s)
		}
	})
}
