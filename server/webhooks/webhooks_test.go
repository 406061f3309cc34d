package webhooks

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz/authztest"
)

// storeRules is every Store method's authorization, as authorized should
// implement it (authz.go).
var storeRules = map[string]string{
	"CreateWebhook": "record", "EnqueueWebhookDeliveries": "record",
	"Webhooks": "account", "DeleteWebhook": "account", "WebhookDeliveries": "account",
	"WebhookDelivery":        "account",
	"ClaimWebhookDeliveries": "system", "FinishWebhookAttempt": "system",
}

type reachedStore struct{ reached *bool }

func (s reachedStore) CreateWebhook(context.Context, *Subscription, int) error {
	*s.reached = true
	return nil
}

func (s reachedStore) Webhooks(context.Context, string) ([]*Subscription, error) {
	*s.reached = true
	return nil, nil
}

func (s reachedStore) DeleteWebhook(context.Context, string, string) error {
	*s.reached = true
	return nil
}

func (s reachedStore) WebhookDeliveries(context.Context, string, string, DeliveryPage) ([]*Delivery, error) {
	*s.reached = true
	return nil, nil
}

func (s reachedStore) WebhookDelivery(context.Context, string, string, string) (*Delivery, error) {
	*s.reached = true
	return nil, nil
}

func (s reachedStore) EnqueueWebhookDeliveries(context.Context, []*Delivery) error {
	*s.reached = true
	return nil
}

func (s reachedStore) ClaimWebhookDeliveries(context.Context, string, time.Time, time.Time, int) ([]*Claim, error) {
	*s.reached = true
	return nil, nil
}

func (s reachedStore) FinishWebhookAttempt(context.Context, string, *Delivery) error {
	*s.reached = true
	return nil
}

func callAs(t *testing.T, method string, ctx context.Context, acct string) (bool, error) {
	t.Helper()
	var reached bool
	m := reflect.ValueOf(authorized{reachedStore{&reached}}).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("authorized has no method %s", method)
	}
	out := m.Call(authztest.Args(m.Type(), ctx, acct, map[reflect.Type]func(string) any{
		reflect.TypeFor[*Subscription](): func(acct string) any { return &Subscription{AccountID: acct} },
		reflect.TypeFor[[]*Delivery]():   func(acct string) any { return []*Delivery{{AccountID: acct}} },
	}))
	err, _ := out[len(out)-1].Interface().(error)
	return reached, err
}

// TestStoreAuthorized: every Store method has a rule, New keeps the store
// behind authorized, and each wrapper lets the system through, the owner
// unless the rule is system, and refuses another account.
func TestStoreAuthorized(t *testing.T) {
	authztest.Rules(t, reflect.TypeFor[Store](), storeRules)
	var reached bool
	s, err := New(Deps{Store: reachedStore{&reached}, Log: slog.New(slog.DiscardHandler), Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.TypeOf(s.store) != reflect.TypeFor[authorized]() {
		t.Errorf("New keeps a %T, want the store behind authorized", s.store)
	}
	authztest.Check(t, storeRules, authztest.Refusals{NotFound: ErrNotFound, SystemOnly: errSystemOnly}, callAs)
}

// TestSign: the documented construction, a known vector, and Verify's
// refusals (another secret, another body, an old timestamp).
func TestSign(t *testing.T) {
	at := time.Unix(1700000000, 0)
	body := []byte(`{"event":"sandbox.created"}`)
	got := Sign("whsec_test", at, body)
	// printf '%s' '1700000000.{"event":"sandbox.created"}' | openssl dgst -sha256 -hmac whsec_test
	want := "t=1700000000,v1=" + mac("whsec_test", "1700000000", body)
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name, secret string
		body         []byte
		now          time.Time
		ok           bool
	}{
		{"valid", "whsec_test", body, at.Add(time.Minute), true},
		{"other secret", "whsec_other", body, at, false},
		{"other body", "whsec_test", []byte(`{}`), at, false},
		{"too old", "whsec_test", body, at.Add(10 * time.Minute), false},
	} {
		if ok := Verify(tc.secret, got, tc.body, tc.now, 5*time.Minute); ok != tc.ok {
			t.Errorf("%s: Verify = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1,v1=00", []byte("x"))
	f.Add("t=,v1", []byte(""))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		_ = Verify("s", header, body, time.Unix(1, 0), time.Minute)
	})
}

// TestCheckURL: forms and literal addresses the SSRF check refuses.
func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url      string
		loopback bool
		ok       bool
	}{
		{"https://hooks.example.com/in", false, true},
		{"http://93.184.216.34/in", false, true},
		{"http://127.0.0.1:8080/in", false, false},
		{"http://127.0.0.1:8080/in", true, true},
		{"http://127.0.0.2/in", true, false},
		{"http://localhost/in", false, false},
		{"http://[::ffff:127.0.0.1]/in", false, false},
		{"http://[::ffff:10.0.0.1]/in", true, false},
		{"http://10.1.2.3/", false, false},
		{"http://172.16.0.1/", false, false},
		{"http://192.168.0.1/", false, false},
		{"http://169.254.169.254/", false, false},
		{"http://100.64.0.1/", false, false},
		{"http://0.0.0.0/", false, false},
		{"http://[fe80::1]/", false, false},
		{"http://[fc00::1]/", false, false},
		{"file:///etc/passwd", false, false},
		{"https://user:pw@hooks.example.com/", false, false},
		{"https:///nohost", false, false},
		{"", false, false},
		// The server's host by its public address (local below): from the
		// host it reaches what the host binds to every address.
		{"http://93.184.216.99/in", false, false},
		{"http://[::ffff:93.184.216.99]/in", false, false},
		// What egress.Refusal refuses beyond the old list of its own.
		{"http://[::10.0.0.1]/in", false, false},         // IPv4-compatible
		{"http://[64:ff9b::a9fe:a9fe]/in", false, false}, // NAT64 of the metadata address
		{"http://192.0.2.7/in", false, false},            // documentation
		{"http://[64:ff9b::5db8:d822]/in", false, true},  // NAT64 of a public address
	} {
		local := []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("93.184.216.99")}
		if err := checkURL(tc.url, tc.loopback, local); (err == nil) != tc.ok {
			t.Errorf("checkURL(%q, loopback %v) = %v, want ok %v", tc.url, tc.loopback, err, tc.ok)
		}
	}
}

// TestCheckURLReason: a refused address says why, in egress.Refusal's words.
func TestCheckURLReason(t *testing.T) {
	local := []netip.Addr{netip.MustParseAddr("93.184.216.99")}
	for raw, want := range map[string]string{
		"http://10.1.2.3/":         "webhook target is a private address",
		"http://93.184.216.99/":    "webhook target is one of this host's own addresses",
		"http://[::ffff:0:0]/":     "webhook target is an unspecified address",
		"http://localhost:8080/in": "webhook target is localhost, a loopback name",
	} {
		if err := checkURL(raw, false, local); err == nil || err.Error() != want {
			t.Errorf("checkURL(%q) = %v, want %q", raw, err, want)
		}
	}
}

// TestUnsafeURLHint: a loopback target refused by a server that refuses
// them says how the operator lets 127.0.0.1 through; others, and any on a
// server that already does, get the general hint.
func TestUnsafeURLHint(t *testing.T) {
	const public = "use a public http(s) URL; loopback, private and link-local addresses and the server's own host are refused"
	const loopback = "a receiver at http://127.0.0.1 needs boxkite-server started with --webhook-allow-loopback " +
		"(in local mode: BOXKITE_SERVER_WEBHOOK_ALLOW_LOOPBACK=true boxkite up, after boxkite down); otherwise " + public
	for _, tc := range []struct {
		url           string
		allowLoopback bool
		want          string
	}{
		{"http://127.0.0.1:8080/hook", false, loopback},
		{"http://127.0.0.2/hook", false, loopback},
		{"http://LOCALHOST:9/x", false, loopback},
		{"http://app.localhost/x", false, loopback},
		{"http://[::1]/x", false, loopback},
		{"http://[::ffff:127.0.0.1]/x", false, loopback},
		{"http://127.0.0.2/hook", true, public},
		{"http://10.0.0.1/x", false, public},
		{"http://169.254.169.254/", false, public},
		{"ftp://127.0.0.1/x", false, public}, // refused for its scheme
		{"http://user:pw@127.0.0.1/x", false, public},
	} {
		err := checkURL(tc.url, tc.allowLoopback, nil)
		if err == nil {
			t.Fatalf("checkURL(%q, %v) accepted it", tc.url, tc.allowLoopback)
		}
		if got := unsafeURLHint(err, tc.url, tc.allowLoopback); got != tc.want {
			t.Errorf("unsafeURLHint(%q, %v) = %q, want %q", tc.url, tc.allowLoopback, got, tc.want)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	f.Add("http://127.0.0.1/")
	f.Add("https://[::1]:80/x")
	f.Fuzz(func(t *testing.T, raw string) {
		if checkURL(raw, false, nil) != nil {
			return
		}
		// Accepted: a literal address in it is public.
		if ip, err := netip.ParseAddr(hostOf(raw)); err == nil && refusal(ip, false, nil) != "" {
			t.Errorf("checkURL accepted %q with a private address", raw)
		}
	})
}

// TestBackoff: 30 s × 2^(n-1), at most an hour.
func TestBackoff(t *testing.T) {
	s, err := New(Deps{Store: reachedStore{new(bool)}, Log: slog.New(slog.DiscardHandler), Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := s.backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
}

// hexSealer is a Sealer for tests: it "encrypts" by hex-encoding the
// value with its ad, so a value opens only with the ad it was sealed with.
type hexSealer struct{}

func (hexSealer) Seal(plain, ad []byte) (string, error) {
	return hex.EncodeToString(append(append([]byte(nil), ad...), plain...)), nil
}

func (hexSealer) Open(sealed string, ad []byte) ([]byte, error) {
	b, err := hex.DecodeString(sealed)
	if err != nil || !bytes.HasPrefix(b, ad) {
		return nil, errors.New("does not open")
	}
	return b[len(ad):], nil
}

// TestSealed: with a Sealer the stored secret and HEC token are sealed
// and open again for the same subscription only; a sealed value on a
// service without a Sealer refuses to send; without a Sealer values are
// stored as they are.
func TestSealed(t *testing.T) {
	sub := &Subscription{ID: "w1", AccountID: "a1", Secret: "whsec_x", HECToken: "hec"}
	with := &Service{d: Deps{Sealer: hexSealer{}}}
	stored, err := with.sealed(sub)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stored.Secret, sealedPrefix) || !strings.HasPrefix(stored.HECToken, sealedPrefix) || sub.Secret != "whsec_x" {
		t.Fatalf("sealed %+v (from %+v)", stored, sub)
	}
	claim := &Claim{Delivery: Delivery{AccountID: "a1", WebhookID: "w1"}, Secret: stored.Secret, HECToken: stored.HECToken}
	got, err := with.opened(claim)
	if err != nil || got.Secret != "whsec_x" || got.HECToken != "hec" {
		t.Errorf("opened: %+v, %v", got, err)
	}
	moved := *claim
	moved.WebhookID = "w2"
	if _, err := with.opened(&moved); err == nil {
		t.Error("a sealed secret opened for another subscription")
	}
	without := &Service{}
	if _, err := without.opened(claim); !errors.Is(err, errNoSealer) {
		t.Errorf("opened without a Sealer: %v, want errNoSealer", err)
	}
	if plain, err := without.sealed(sub); err != nil || plain.Secret != "whsec_x" {
		t.Errorf("sealed without a Sealer: %+v, %v", plain, err)
	}
}
