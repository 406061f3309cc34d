package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsFromFiles: secrets come from 0600 files, /dev/fd/N or a
// secrets directory; the environment variables older versions read are
// refused, since their values would stay in /proc/<pid>/environ (issue
// 17, finding 5).
func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := "bxk_live_" + strings.Repeat("A", 43)
	jwt := strings.Repeat("j", 40)
	bastion := strings.Repeat("b", 40)
	keyFile := write("key", key+"\n", 0o600)
	jwtFile := write("jwt", jwt, 0o400)
	open := write("open", key, 0o644)
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	write("secrets/jwt-secret", jwt, 0o600)
	write("secrets/bastion-key", bastion, 0o600)

	tests := []struct {
		name                          string
		args                          []string
		env                           map[string]string
		wantKey, wantJWT, wantBastion string
		wantDB                        string   // "" means the default
		wantErr                       []string // substrings of the error and hint; nil: no error
	}{
		{name: "database DSN from a file", args: []string{"--db-file", write("dsn", "postgres://u:pw@127.0.0.1/db\n", 0o600)}, wantDB: "postgres://u:pw@127.0.0.1/db"},
		{name: "db and db-file", args: []string{"--db", "sqlite:/x", "--db-file", keyFile}, wantErr: []string{"keep one"}},
		{name: "DSN readable by others", args: []string{"--db-file", open}, wantErr: []string{"--db-file", "chmod 600"}},
		{name: "flags", args: []string{"--bootstrap-key-file", keyFile, "--jwt-secret-file", jwtFile}, wantKey: key, wantJWT: jwt},
		{name: "env twin of a file flag", env: map[string]string{"BOXKITE_SERVER_BASTION_KEY_FILE": jwtFile}, wantBastion: jwt},
		{name: "secrets dir", args: []string{"--secrets-dir", secrets}, wantJWT: jwt, wantBastion: bastion},
		{name: "secrets dir and a flag", args: []string{"--secrets-dir", secrets, "--bootstrap-key-file", keyFile}, wantKey: key, wantJWT: jwt, wantBastion: bastion},
		{name: "both name one secret", args: []string{"--secrets-dir", secrets, "--jwt-secret-file", jwtFile}, wantErr: []string{"both give jwt-secret"}},
		{name: "readable by others", args: []string{"--bootstrap-key-file", open}, wantErr: []string{"readable by others", "chmod 600 " + open}},
		{name: "missing file", args: []string{"--jwt-secret-file", filepath.Join(dir, "none")}, wantErr: []string{"--jwt-secret-file", "no such file"}},
		{name: "bootstrap key in env", env: map[string]string{bootstrapKeyEnv: key}, wantErr: []string{bootstrapKeyEnv + " is set", "--bootstrap-key-file FILE"}},
		{name: "jwt secret in env", env: map[string]string{jwtSecretEnv: jwt}, wantErr: []string{jwtSecretEnv + " is set", "--jwt-secret-file"}},
		{name: "bastion key in env", env: map[string]string{bastionKeyEnv: bastion}, wantErr: []string{bastionKeyEnv + " is set", "--bastion-key-file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(tt.args, envFunc(tt.env), io.Discard)
			if err == nil {
				err = readSecrets(o)
			}
			if tt.wantErr != nil {
				ue, ok := err.(*usageError)
				if !ok {
					t.Fatalf("error %v (%T), want a usage error", err, err)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(ue.msg+" hint: "+ue.hint, w) {
						t.Errorf("error %q, hint %q: want %q", ue.msg, ue.hint, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.bootstrapKey != tt.wantKey || o.jwtSecret != tt.wantJWT || o.bastionKey != tt.wantBastion {
				t.Errorf("secrets %q %q %q, want %q %q %q", o.bootstrapKey, o.jwtSecret, o.bastionKey, tt.wantKey, tt.wantJWT, tt.wantBastion)
			}
			if tt.wantDB != "" && o.db != tt.wantDB {
				t.Errorf("db %q, want %q", o.db, tt.wantDB)
			}
		})
	}
}

// TestSecretInEnvExits: run refuses to start with a secret in its
// environment, exit code 2, error and hint on stderr.
func TestSecretInEnvExits(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	code := run(context.Background(), []string{"--state-dir", t.TempDir()}, envFunc(map[string]string{bootstrapKeyEnv: "bxk_live_x"}), &out)
	if code != 2 || !strings.Contains(out.String(), "error: "+bootstrapKeyEnv+" is set") || !strings.Contains(out.String(), "hint: unset it") {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 with the error and its hint", code, out.String())
	}
	if strings.Contains(out.String(), "bxk_live_x") {
		t.Errorf("stderr repeats the secret:\n%s", out.String())
	}
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://h/db":                    "postgres://h/db",
		"sqlite:/var/lib/boxkite/boxkite.db": "sqlite:/var/lib/boxkite/boxkite.db",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
