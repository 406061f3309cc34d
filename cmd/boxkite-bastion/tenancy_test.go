//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// testTenancy: another account's registered key reaches the fixture's
// sandbox exactly as an unregistered key does, destroyed or not; the
// sandbox's own key to a destroyed sandbox is told it is destroyed and
// what to do, not that its key is unregistered.
func (f *fixture) testTenancy(t *testing.T) {
	ctx := t.Context()
	tok, err := client.New(f.srv.BaseURL, "").Signup(ctx, "other-tenant@example.com", "other-password")
	if err != nil {
		t.Fatalf("signup: %v", err)
	}
	k, err := client.New(f.srv.BaseURL, tok.AccessToken).CreateAPIKey(ctx, api.CreateAPIKeyRequest{Name: "other"})
	if err != nil {
		t.Fatalf("other's key: %v", err)
	}
	otherKey := f.keygen("other")
	pub, err := os.ReadFile(otherKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(f.srv.BaseURL, k.Key).AddSSHKey(ctx, api.AddSSHKeyRequest{PublicKey: string(pub)}); err != nil {
		t.Fatalf("other's ssh key: %v", err)
	}
	gone, err := f.admin.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	if err := f.admin.DeleteSandbox(ctx, gone.ID); err != nil {
		t.Fatalf("delete sandbox: %v", err)
	}
	// ssh at its default log level shows the refusal's banner.
	attempt := func(key, sandbox string) (int, string) {
		args := f.sshArgs(key, nil, "true")
		args[slices.Index(args, "LogLevel=ERROR")] = "LogLevel=INFO"
		args[slices.Index(args, f.sandbox+"@127.0.0.1")] = sandbox + "@127.0.0.1"
		code, _, stderr := f.run(t, args, "")
		return code, banner(strings.ReplaceAll(stderr, sandbox, "ID"))
	}
	_, unregistered := attempt(f.badKey, f.sandbox)
	for _, sandbox := range []string{f.sandbox, gone.ID} {
		code, stderr := attempt(otherKey, sandbox)
		if code != 255 || !strings.Contains(stderr, "is not registered to the account of sandbox") ||
			strings.ReplaceAll(stderr, fingerprint(t, otherKey), "FP") != strings.ReplaceAll(unregistered, fingerprint(t, f.badKey), "FP") {
			t.Errorf("another account's key to %s: exit %d, %q; want 255 and what an unregistered key gets, %q", sandbox, code, stderr, unregistered)
		}
	}
	code, stderr := attempt(f.goodKey, gone.ID)
	if code != 255 || !strings.HasPrefix(stderr, "boxkite-bastion: sandbox ID is destroyed\n") ||
		!strings.Contains(stderr, "hint: create a new sandbox with `boxkite session create`") {
		t.Errorf("own key to a destroyed sandbox: exit %d, %q; want 255, that it is destroyed and a hint", code, stderr)
	}
}

// banner is the bastion's refusal in ssh's stderr: its two lines, without
// what ssh adds (a known_hosts warning on the first connection).
func banner(stderr string) string {
	var out []string
	for l := range strings.SplitSeq(stderr, "\n") {
		if strings.HasPrefix(l, "boxkite-bastion: ") || strings.HasPrefix(l, "hint: ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// fingerprint is the SHA256 fingerprint of the public key beside a
// private key file, as the bastion's refusal names it.
func fingerprint(t *testing.T, key string) string {
	b, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return gossh.FingerprintSHA256(pub)
}

// TestRefusalText: what the banner says for each answer of the server;
// a sandbox that is not active is named with the server's own words
// (paused: resume it) only after the key was found to be its account's.
func TestRefusalText(t *testing.T) {
	t.Parallel()
	raw, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := gossh.NewPublicKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		err        error
		what, hint string
	}{
		{errors.New("dial tcp: refused"), "the control plane did not answer", "boxkite status"},
		{&api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound}, "is not registered to the account of sandbox \"sb1\", or there is no such sandbox", "works through `boxkite ssh-config`"},
		{
			&api.Error{Status: http.StatusConflict, Code: api.CodeSandboxPaused, Message: "sandbox sb1 is paused (freeze)", Hint: "resume it first: `boxkite session resume sb1`"},
			"sandbox sb1 is paused (freeze)", "resume it first: `boxkite session resume sb1`",
		},
		{
			&api.Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: "sandbox sb1 is destroyed", Hint: "create a new sandbox with `boxkite session create`"},
			"sandbox sb1 is destroyed", "create a new sandbox",
		},
		{&api.Error{Status: http.StatusGone, Code: api.CodeSandboxLost, Message: "sandbox sb1 is lost: x", Hint: "its processes and files are gone"}, "sandbox sb1 is lost", "files are gone"},
		{&api.Error{Status: http.StatusConflict}, "sandbox sb1 is not active", "boxkite session create"},
	}
	const full = "0b9e0a5e-0000-4000-8000-000000000000"
	what, hint := refusalText(full, key, &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound})
	if !strings.Contains(what, "is not registered") || !strings.HasPrefix(hint, "register it with `boxkite ssh-keys add") {
		t.Errorf("refusalText(a full id, 404) = %q, %q; want the unregistered key's hint", what, hint)
	}
	// The hint names the file of the key ssh offered, not always ed25519's.
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := gossh.NewPublicKey(&ecKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, hint := refusalText(full, ec, &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound}); !strings.HasPrefix(hint, "register it with `boxkite ssh-keys add ~/.ssh/id_ecdsa.pub`") {
		t.Errorf("refusalText(an ECDSA key, 404) hint %q; want it to name ~/.ssh/id_ecdsa.pub", hint)
	}
	for _, tt := range tests {
		what, hint := refusalText("sb1", key, tt.err)
		if !strings.Contains(what, tt.what) || !strings.Contains(hint, tt.hint) {
			t.Errorf("refusalText(%v) = %q, %q; want %q and %q", tt.err, what, hint, tt.what, tt.hint)
		}
	}
}
