package secrets

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

func mustKeyring(t *testing.T, lines ...string) *Keyring {
	t.Helper()
	k, err := ParseKeyring(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseKeyring(t *testing.T) {
	k1, k2 := NewKey(), NewKey()
	tests := []struct {
		name    string
		text    string
		wantErr string
		keys    int
	}{
		{"one", k1 + "\n", "", 1},
		{"comments and blanks", "# newest first\n\n" + k1 + "\n  " + k2 + "  \n", "", 2},
		{"raw url", strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(k1), "="), "", 1},
		{"empty", "\n# nothing\n", "no key", 0},
		{"short", "c2hvcnQ=", "32 bytes", 0},
		{"not base64", "!!!", "not base64", 0},
		{"twice", k1 + "\n" + k1, "twice", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKeyring(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(k.keys) != tt.keys {
				t.Fatalf("ParseKeyring: %v, %d keys", err, len(k.keys))
			}
		})
	}
}

// TestEnvelope: a value opens under its own record only; the ciphertext
// holds neither it nor its data key in the clear.
func TestEnvelope(t *testing.T) {
	k := mustKeyring(t, NewKey())
	value := []byte("super-secret-value-123")
	r := &Record{ID: "s1", AccountID: "a1"}
	if err := k.seal(r, value); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(r.Ciphertext, value) || bytes.Contains(r.WrappedKey, value) || r.KeyID != k.PrimaryID() {
		t.Fatalf("sealed record %+v", r)
	}
	got, err := k.open(r)
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("open: %q, %v", got, err)
	}
	// Moved to another secret or another account, it does not open.
	for _, moved := range []*Record{
		{ID: "s2", AccountID: "a1", KeyID: r.KeyID, WrappedKey: r.WrappedKey, Ciphertext: r.Ciphertext},
		{ID: "s1", AccountID: "a2", KeyID: r.KeyID, WrappedKey: r.WrappedKey, Ciphertext: r.Ciphertext},
	} {
		if _, err := k.open(moved); err == nil {
			t.Errorf("%s/%s opened another record's value", moved.AccountID, moved.ID)
		}
	}
	// Tampered, it does not open.
	bad := *r
	bad.Ciphertext = append([]byte(nil), r.Ciphertext...)
	bad.Ciphertext[len(bad.Ciphertext)-1] ^= 1
	if _, err := k.open(&bad); err == nil {
		t.Error("a tampered ciphertext opened")
	}
	// Another key cannot open it.
	if _, err := mustKeyring(t, NewKey()).open(r); err == nil {
		t.Error("another keyring opened it")
	}
}

// TestSealOpen: a sealed value opens with its ad, under the key that
// sealed it even after a rotation, and not with another ad, another
// keyring, tampered, or malformed.
func TestSealOpen(t *testing.T) {
	old := NewKey()
	k := mustKeyring(t, old)
	plain, ad := []byte("whsec_0123"), []byte("webhook\x00a1\x00w1\x00secret")
	sealed, err := k.Seal(plain, ad)
	if err != nil || strings.Contains(sealed, string(plain)) || !strings.HasPrefix(sealed, "v1."+k.PrimaryID()+".") {
		t.Fatalf("Seal: %q, %v", sealed, err)
	}
	rotated := mustKeyring(t, NewKey(), old)
	for name, ring := range map[string]*Keyring{"same ring": k, "rotated ring": rotated} {
		if got, err := ring.Open(sealed, ad); err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s: Open = %q, %v", name, got, err)
		}
	}
	tampered := []byte(sealed)
	tampered[len(tampered)-2] ^= 1
	for name, c := range map[string]struct {
		ring   *Keyring
		sealed string
		ad     []byte
	}{
		"another ad":      {k, sealed, []byte("webhook\x00a2\x00w1\x00secret")},
		"another keyring": {mustKeyring(t, NewKey()), sealed, ad},
		"tampered":        {k, string(tampered), ad},
		"not sealed":      {k, "whsec_0123", ad},
		"another version": {k, "v2" + sealed[2:], ad},
		"bad base64":      {k, "v1." + k.PrimaryID() + ".!!", ad},
	} {
		if got, err := c.ring.Open(c.sealed, c.ad); err == nil {
			t.Errorf("%s: opened to %q", name, got)
		}
	}
}

// memStore is a Store in memory, for Rotate.
type memStore struct {
	mu   sync.Mutex
	recs map[string]*Record
}

func (m *memStore) CreateSecret(_ context.Context, r *Record, _ int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *r
	m.recs[r.ID] = &c
	return nil
}

func (m *memStore) Secrets(context.Context, string) ([]*Record, error) {
	return m.AllSecrets(context.Background())
}

func (m *memStore) AllSecrets(context.Context) ([]*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Record
	for _, r := range m.recs {
		c := *r
		out = append(out, &c)
	}
	return out, nil
}

func (m *memStore) UpdateSecret(context.Context, *Record) error        { return nil }
func (m *memStore) DeleteSecret(context.Context, string, string) error { return nil }

func (m *memStore) RewrapSecret(_ context.Context, id, oldKeyID, keyID string, wrapped []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok || r.KeyID != oldKeyID {
		return ErrChanged
	}
	r.KeyID, r.WrappedKey = keyID, wrapped
	return nil
}

func (m *memStore) TouchSecrets(context.Context, string, []string, time.Time) error { return nil }
func (m *memStore) GrantSecrets(context.Context, string, []string) error            { return nil }
func (m *memStore) SandboxSecretNames(context.Context, string) ([]string, error)    { return nil, nil }

func (m *memStore) SandboxSecretGrants(context.Context, string) ([]model.SecretGrant, error) {
	return nil, nil
}
func (m *memStore) InheritSecrets(context.Context, string, []model.SecretGrant) error { return nil }

// TestRotate: a new primary key rewraps every data key; the old key may
// then go, and the values still open. A record under a key the file
// lacks is counted, not fatal.
func TestRotate(t *testing.T) {
	ctx := context.Background()
	old, next := NewKey(), NewKey()
	st := &memStore{recs: map[string]*Record{}}
	s1 := New(st, Config{Keyring: mustKeyring(t, old)})
	for _, id := range []string{"a", "b"} {
		r := &Record{ID: id, AccountID: "acct"}
		if err := s1.keys.seal(r, []byte("value-"+id)); err != nil {
			t.Fatal(err)
		}
		_ = st.CreateSecret(ctx, r, 50)
	}
	s2 := New(st, Config{Keyring: mustKeyring(t, next, old)})
	n, unknown, err := s2.Rotate(ctx)
	if err != nil || n != 2 || unknown != 0 {
		t.Fatalf("Rotate = %d, %d, %v; want 2, 0", n, unknown, err)
	}
	if n, _, _ := s2.Rotate(ctx); n != 0 {
		t.Errorf("second Rotate rewrapped %d", n)
	}
	only := mustKeyring(t, next)
	rs, _ := st.AllSecrets(ctx)
	for _, r := range rs {
		v, err := only.open(r)
		if err != nil || string(v) != "value-"+r.ID {
			t.Errorf("after rotation %s opens to %q, %v", r.ID, v, err)
		}
	}
	s3 := New(st, Config{Keyring: mustKeyring(t, NewKey())})
	if n, unknown, err := s3.Rotate(ctx); err != nil || n != 0 || unknown != 2 {
		t.Errorf("Rotate with a foreign key = %d, %d, %v; want 0, 2, nil", n, unknown, err)
	}
}

func TestRedactor(t *testing.T) {
	r := newRedactor(map[string]string{"TOK": "a+b/c=d?&", "K2": "plain"})
	in := `raw a+b/c=d?& query a%2Bb%2Fc%3Dd%3F%26 json "a+b/c=d?\u0026" b64 YStiL2M9ZD8m and plain, plainly`
	got := r.apply(in)
	for _, leak := range []string{"a+b/c=d?&", "a%2Bb%2Fc%3Dd%3F%26", "YStiL2M9ZD8m", "plain"} {
		if strings.Contains(got, leak) {
			t.Errorf("%q left in %q", leak, got)
		}
	}
	if !strings.Contains(got, "[REDACTED_SECRET:TOK]") || !strings.Contains(got, "[REDACTED_SECRET:K2]") {
		t.Errorf("got %q", got)
	}
}
