package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConfigPrecedence(t *testing.T) {
	const (
		hostedTOML = "base_url = \"https://hosted.example\"\napi_key = \"bxk_live_hosted\"\n"
		localTOML  = "base_url = \"http://127.0.0.1:9001\"\napi_key = \"bxk_live_local\"\n"
		otherTOML  = "base_url = \"http://127.0.0.1:9002\"\napi_key = \"bxk_live_other\"\n"
	)
	tests := []struct {
		name   string
		hosted string // config.toml content, "" for none
		local  string // local.toml content
		// files are more files under the home: contexts/NAME.toml, context.toml.
		files map[string]string
		env   map[string]string
		flags []string
		want  Config // Home and File are filled in relative to the temp home
		file  string // hostedFile, localFile or ""
	}{
		{
			name: "defaults",
			want: Config{Context: "local", BaseURL: DefaultURL, Local: true, Sources: map[string]string{keyBaseURL: "default", keyAPIKey: "default"}},
		},
		{
			name:  "local file",
			local: localTOML,
			file:  localFile,
			want:  Config{Context: "local", BaseURL: "http://127.0.0.1:9001", APIKey: "bxk_live_local", Local: true, Sources: map[string]string{keyBaseURL: "file local.toml", keyAPIKey: "file local.toml"}},
		},
		{
			name:   "hosted wins over local when complete",
			hosted: hostedTOML,
			local:  localTOML,
			file:   hostedFile,
			want:   Config{Context: "hosted", BaseURL: "https://hosted.example", APIKey: "bxk_live_hosted", Sources: map[string]string{keyBaseURL: "file config.toml", keyAPIKey: "file config.toml"}},
		},
		{
			name:   "signed up on the local server: config.toml wins, the local bastion stays",
			hosted: "base_url = \"http://127.0.0.1:9001/\"\napi_key = \"bxk_live_signup\"\n",
			local:  localTOML + "bastion = \"127.0.0.1:2299\"\n",
			file:   hostedFile,
			want:   Config{Context: "hosted", BaseURL: "http://127.0.0.1:9001", APIKey: "bxk_live_signup", Bastion: "127.0.0.1:2299", Local: true, Sources: map[string]string{keyBaseURL: "file config.toml", keyAPIKey: "file config.toml"}},
		},
		{
			name:   "another server's config.toml does not take the local bastion",
			hosted: hostedTOML,
			local:  localTOML + "bastion = \"127.0.0.1:2299\"\n",
			file:   hostedFile,
			want:   Config{Context: "hosted", BaseURL: "https://hosted.example", APIKey: "bxk_live_hosted", Sources: map[string]string{keyBaseURL: "file config.toml", keyAPIKey: "file config.toml"}},
		},
		{
			name:   "half a hosted config does not shadow local",
			hosted: "base_url = \"https://hosted.example\"\n",
			local:  localTOML,
			file:   localFile,
			want:   Config{Context: "local", BaseURL: "http://127.0.0.1:9001", APIKey: "bxk_live_local", Local: true, Sources: map[string]string{keyBaseURL: "file local.toml", keyAPIKey: "file local.toml"}},
		},
		{
			name:   "env beats file",
			hosted: hostedTOML,
			env:    map[string]string{envURL: "https://env.example/", envAPIKey: "bxk_live_env"},
			file:   hostedFile,
			want:   Config{Context: "hosted", BaseURL: "https://env.example", APIKey: "bxk_live_env", Sources: map[string]string{keyBaseURL: "env BOXKITE_URL", keyAPIKey: "env BOXKITE_API_KEY"}},
		},
		{
			name:   "flag beats env",
			hosted: hostedTOML,
			env:    map[string]string{envURL: "https://env.example", envAPIKey: "bxk_live_env"},
			flags:  []string{"--url", "https://flag.example", "--api-key", "bxk_live_flag"},
			file:   hostedFile,
			want:   Config{Context: "hosted", BaseURL: "https://flag.example", APIKey: "bxk_live_flag", Sources: map[string]string{keyBaseURL: "flag --url", keyAPIKey: "flag --api-key"}},
		},
		{
			name:  "mixed sources",
			local: localTOML,
			env:   map[string]string{envAPIKey: "bxk_live_env"},
			file:  localFile,
			want:  Config{Context: "local", BaseURL: "http://127.0.0.1:9001", APIKey: "bxk_live_env", Local: true, Sources: map[string]string{keyBaseURL: "file local.toml", keyAPIKey: "env BOXKITE_API_KEY"}},
		},
		{
			name:  "a loopback URL from a flag is local mode",
			flags: []string{"--url", "http://localhost:7000"},
			want:  Config{Context: "local", BaseURL: "http://localhost:7000", Local: true, Sources: map[string]string{keyBaseURL: "flag --url", keyAPIKey: "default"}},
		},
		{
			name:   "a chosen context: its file alone, even over a complete config.toml",
			hosted: hostedTOML,
			local:  localTOML,
			files:  map[string]string{"contexts/other.toml": otherTOML, currentFile: "current = 'other'\n"},
			file:   "contexts/other.toml",
			want:   Config{Context: "other", BaseURL: "http://127.0.0.1:9002", APIKey: "bxk_live_other", Local: true, Sources: map[string]string{keyBaseURL: "file contexts/other.toml", keyAPIKey: "file contexts/other.toml", keyContext: "file context.toml"}},
		},
		{
			name:   "context use local beats a complete config.toml",
			hosted: hostedTOML,
			local:  localTOML,
			files:  map[string]string{currentFile: "current = 'local'\n"},
			file:   localFile,
			want:   Config{Context: "local", BaseURL: "http://127.0.0.1:9001", APIKey: "bxk_live_local", Local: true, Sources: map[string]string{keyBaseURL: "file local.toml", keyAPIKey: "file local.toml", keyContext: "file context.toml"}},
		},
		{
			name:  "local before up: the default URL",
			files: map[string]string{currentFile: "current = 'local'\n"},
			want:  Config{Context: "local", BaseURL: DefaultURL, Local: true, Sources: map[string]string{keyBaseURL: "default", keyAPIKey: "default", keyContext: "file context.toml"}},
		},
		{
			name:   "env BOXKITE_CONTEXT beats context use",
			hosted: hostedTOML,
			files:  map[string]string{"contexts/other.toml": otherTOML, currentFile: "current = 'other'\n"},
			env:    map[string]string{envContext: "hosted"},
			file:   hostedFile,
			want:   Config{Context: "hosted", BaseURL: "https://hosted.example", APIKey: "bxk_live_hosted", Sources: map[string]string{keyBaseURL: "file config.toml", keyAPIKey: "file config.toml", keyContext: "env BOXKITE_CONTEXT"}},
		},
		{
			name:  "flag --context beats env, and --api-key beats the context",
			files: map[string]string{"contexts/other.toml": otherTOML},
			env:   map[string]string{envContext: "local"},
			flags: []string{"--context", "other", "--api-key", "bxk_live_flag"},
			file:  "contexts/other.toml",
			want:  Config{Context: "other", BaseURL: "http://127.0.0.1:9002", APIKey: "bxk_live_flag", Local: true, Sources: map[string]string{keyBaseURL: "file contexts/other.toml", keyAPIKey: "flag --api-key", keyContext: "flag --context"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			if tt.hosted != "" {
				writeFile(t, filepath.Join(home, hostedFile), tt.hosted)
			}
			for name, content := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(home, name)), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(home, name), content)
			}
			if tt.local != "" {
				writeFile(t, filepath.Join(home, localFile), tt.local)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.String("url", "", "")
			fs.String("api-key", "", "")
			fs.String("context", "", "")
			if err := fs.Parse(tt.flags); err != nil {
				t.Fatal(err)
			}
			got, err := LoadConfig(fs)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			want := tt.want
			want.Home = home
			if tt.file != "" {
				want.File = filepath.Join(home, tt.file)
			}
			want.Sources[keyHome] = "env BOXKITE_HOME"
			if _, ok := want.Sources[keyContext]; !ok {
				want.Sources[keyContext] = "derived"
			}
			for k, v := range want.Sources {
				if name, ok := strings.CutPrefix(v, "file "); ok {
					want.Sources[k] = "file " + filepath.Join(home, name)
				}
			}
			want.PersonalKey = want.APIKey // no organization in these files
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("LoadConfig mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigOrganization: after 'org switch' the context's file names an
// organization and its key, which is used instead of api_key (kept as
// PersonalKey for the org commands); a key from the environment beats
// both and acts for itself.
func TestConfigOrganization(t *testing.T) {
	home := t.TempDir()
	t.Setenv(envHome, home)
	t.Setenv(envAPIKey, "")
	t.Setenv(envURL, "")
	t.Setenv(envContext, "")
	file := "version = 1\nbase_url = \"https://boxkite.example.com\"\napi_key = \"bxk_live_me\"\norg = \"o1\"\norg_name = \"acme\"\norg_api_key = \"bxk_live_org\"\n"
	if err := os.WriteFile(filepath.Join(home, hostedFile), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.APIKey != "bxk_live_org" || got.PersonalKey != "bxk_live_me" || got.Org != "o1" || got.OrgName != "acme" {
		t.Errorf("switched: key %q personal %q org %q %q", got.APIKey, got.PersonalKey, got.Org, got.OrgName)
	}
	t.Setenv(envAPIKey, "bxk_live_env")
	got, err = LoadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.APIKey != "bxk_live_env" || got.PersonalKey != "bxk_live_env" || got.Org != "" {
		t.Errorf("with BOXKITE_API_KEY: key %q personal %q org %q", got.APIKey, got.PersonalKey, got.Org)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, file, content, env, want string
	}{
		{name: "unknown key", file: hostedFile, content: "base_url = \"https://x\"\napi_kye = \"k\"\n", want: "unknown key"},
		{name: "not toml", file: localFile, content: "base_url = \n", want: "local.toml"},
		{name: "bad URL", env: "ftp://x", want: `invalid base_url "ftp://x" (from env BOXKITE_URL)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			if tt.file != "" {
				writeFile(t, filepath.Join(home, tt.file), tt.content)
			}
			if tt.env != "" {
				t.Setenv(envURL, tt.env)
			}
			_, err := LoadConfig(nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadConfig() error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestConfigShow(t *testing.T) {
	home := isolate(t)
	writeFile(t, filepath.Join(home, localFile), "base_url = \"http://127.0.0.1:9001\"\napi_key = \"bxk_live_abcdefghijklmnopqrstuvwxyz0123456789_-ABCDE\"\n")
	t.Setenv(envAPIKey, "bxk_live_Zyxwvutsrqponmlkjihgfedcba9876543210-_QWERT")

	got := runCLI(t, "", "config", "show", "--url", "http://127.0.0.1:9999")
	want := strings.Join([]string{
		"KEY       VALUE                  SOURCE",
		"context   local                  derived",
		"base_url  http://127.0.0.1:9999  flag --url",
		"api_key   bxk_live_Zyxw…         env BOXKITE_API_KEY",
		"home      " + home + "  env BOXKITE_HOME",
		"mode      local                  derived",
	}, "\n") + "\n"
	// The home column is as wide as the temp dir; compare it field by field.
	if got.code != 0 || got.stderr != "" {
		t.Fatalf("config show: code %d, stderr %q", got.code, got.stderr)
	}
	if diff := cmp.Diff(fields(want), fields(got.stdout)); diff != "" {
		t.Errorf("config show (-want +got):\n%s", diff)
	}
	if strings.Contains(got.stdout, "abcdefgh") || strings.Contains(got.stdout, "Zyxwvuts") {
		t.Errorf("config show leaks an API key:\n%s", got.stdout)
	}
}

func fields(s string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, strings.Fields(line))
	}
	return out
}

func TestConfigSetWritesOnlyTheFile(t *testing.T) {
	home := isolate(t)
	t.Setenv(envAPIKey, "bxk_live_fromenv") // must not leak into the file
	if r := runCLI(t, "", "config", "set-url", "https://boxkite.example.com/"); r.code != 0 {
		t.Fatalf("set-url: %+v", r)
	}
	if r := runCLI(t, "bxk_live_pipedpipedpipedpipedpipedpipedpipedpipedpip\n", "config", "set-key"); r.code != 0 {
		t.Fatalf("set-key: %+v", r)
	}
	path := filepath.Join(home, hostedFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "version = 1\nbase_url = 'https://boxkite.example.com'\napi_key = 'bxk_live_pipedpipedpipedpipedpipedpipedpipedpipedpip'\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("config.toml (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("config.toml mode = %o, want 600", perm)
	}
	if r := runCLI(t, "", "config", "set-url", "http://remote.example.com"); r.code != exitUsage {
		t.Errorf("set-url with plain http to a remote host: code %d, want %d", r.code, exitUsage)
	}
}

func TestMaskKey(t *testing.T) {
	tests := map[string]string{
		"": "",
		"bxk_live_abcd_fghijklmnopqrstuvwxyz0123456789_-ABCDEFG": "bxk_live_abcd…",
		"bxk_live_short":      "bxk_live_****",
		"plainsecretvalue123": "plai…",
	}
	for in, want := range tests {
		if got := maskKey(in); got != want {
			t.Errorf("maskKey(%q) = %q, want %q", in, got, want)
		}
	}
}
