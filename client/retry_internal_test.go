package client

import (
	"net/http"
	"testing"
	"time"
)

// FuzzParseRetryAfter: any header value parses without panicking, to no
// negative wait.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "120", " 3 ", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "1.5", "", "99999999999"} {
		f.Add(s)
	}
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d, ok := parseRetryAfter(v, now); ok && d < 0 {
			t.Errorf("parseRetryAfter(%q) = %v", v, d)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"Wed, 21 Oct 2015 07:28:10 GMT", 10 * time.Second, true},
		{"Wed, 21 Oct 2015 07:00:00 GMT", 0, true},
		{"soon", 0, false},
		{"-5", 0, false},
		{"", 0, false},
	} {
		if got, ok := parseRetryAfter(tc.in, now); got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzServerTooOld: any Boxkite-Version is judged without panicking.
func FuzzServerTooOld(f *testing.F) {
	for _, s := range []string{"dev", "v1.2.3", "0.0.1", "v0.0.0-2026-abc", "1.2", "v99999999999999999999.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("Boxkite-Version", v)
		_ = serverTooOld(h)
	})
}
