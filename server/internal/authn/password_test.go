package authn_test

import (
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authn"
)

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h := authn.HashPassword("correct horse")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Count(h, "$") != 5 {
		t.Errorf("HashPassword = %q, want a PHC argon2id string", h)
	}
	if h2 := authn.HashPassword("correct horse"); h2 == h {
		t.Errorf("two hashes of one password are equal: the salt is not random")
	}
	for _, tt := range []struct {
		password string
		want     bool
	}{
		{"correct horse", true},
		{"correct horse ", false},
		{"Correct horse", false},
		{"", false},
	} {
		if got, err := authn.VerifyPassword(h, tt.password); err != nil || got != tt.want {
			t.Errorf("VerifyPassword(%q) = %v, %v; want %v", tt.password, got, err, tt.want)
		}
	}
}

func TestPasswordHashMalformed(t *testing.T) {
	t.Parallel()
	good := authn.HashPassword("pw")
	parts := strings.Split(good, "$")
	with := func(i int, v string) string {
		p := append([]string(nil), parts...)
		p[i] = v
		return strings.Join(p, "$")
	}
	for _, tt := range []struct{ name, hash string }{
		{"empty", ""},
		{"bcrypt", "$2a$10$abcdefghijklmnopqrstuu5eGfMSMY.3KQmYu0xGc8/Ykq0L3bZFq"},
		{"argon2i", with(1, "argon2i")},
		{"old version", with(2, "v=16")},
		{"no parameters", with(3, "")},
		{"huge memory", with(3, "m=4194304,t=2,p=1")},
		{"many passes", with(3, "m=19456,t=1000,p=1")},
		{"zero threads", with(3, "m=19456,t=2,p=0")},
		{"bad salt", with(4, "!!!")},
		{"short key", with(5, "AAAA")},
		{"extra field", good + "$x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if ok, err := authn.VerifyPassword(tt.hash, "pw"); err == nil || ok {
				t.Errorf("VerifyPassword(%q) = %v, %v; want an error", tt.hash, ok, err)
			}
		})
	}
}
