package sidecar

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// A step is one request in a claim scenario and the status it must get.
type claimStep struct {
	method, path, token, body string
	want                      int
	wantCode                  string // for an error status
}

func TestClaim(t *testing.T) {
	t.Parallel()
	const pool, fresh = "pool-token", "fresh-token"
	exec := func(token string, want int, code string) claimStep {
		return claimStep{"POST", "/exec", token, `{"command":"true"}`, want, code}
	}
	claim := func(token, newToken string, want int, code string) claimStep {
		return claimStep{"POST", "/claim", token, `{"token":"` + newToken + `"}`, want, code}
	}
	// A health check that presents a token says whether it is the
	// sidecar's (a restart tells a claimed sidecar from one that refused
	// its claim) and is no use of it.
	health := func(token string, want int, code string) claimStep {
		return claimStep{"GET", "/health", token, "", want, code}
	}
	tests := []struct {
		name      string
		claimable bool
		steps     []claimStep
	}{
		{"rotates the token once", true, []claimStep{
			{"GET", "/health", "", "", 200, ""}, // health checks do not count as use
			claim(pool, fresh, 204, ""),
			exec(pool, 401, api.CodeUnauthorized),
			exec(fresh, 200, ""),
			claim(fresh, "third", 409, api.CodeConflict),
			claim(pool, "third", 401, api.CodeUnauthorized),
			exec(fresh, 200, ""),
		}},
		{"refused after use", true, []claimStep{
			exec(pool, 200, ""),
			claim(pool, fresh, 409, api.CodeConflict),
			exec(pool, 200, ""),
			exec(fresh, 401, api.CodeUnauthorized),
			health(fresh, 401, api.CodeUnauthorized),
			health(pool, 200, ""),
		}},
		{"health tells whose token", true, []claimStep{
			health(pool, 200, ""),
			health(fresh, 401, api.CodeUnauthorized),
			health("", 200, ""),
			claim(pool, fresh, 204, ""), // the health checks did not use it
			health(fresh, 200, ""),
			health(pool, 401, api.CodeUnauthorized),
			health("", 200, ""),
		}},
		{"needs the pool token", true, []claimStep{
			claim("", fresh, 401, api.CodeUnauthorized),
			claim("guess", fresh, 401, api.CodeUnauthorized),
			claim(pool, fresh, 204, ""), // failed attempts did not use it up
		}},
		{"validates the new token", true, []claimStep{
			claim(pool, "", 422, api.CodeValidation),
			claim(pool, "a b", 422, api.CodeValidation),
			{"POST", "/claim", pool, `{`, 400, api.CodeBadRequest},
			exec(pool, 200, ""),
		}},
		{"absent unless claimable", false, []claimStep{
			claim(pool, fresh, 404, api.CodeNotFound),
			exec(pool, 200, ""),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := newServer(t, Options{Token: pool, Claimable: tt.claimable})
			for i, s := range tt.steps {
				h := http.Header{}
				if s.token != "" {
					h.Set(api.HeaderSidecarToken, s.token)
				}
				status, body := call(t, s.method, srv.URL+s.path, h, s.body)
				if status != s.want {
					t.Fatalf("step %d: %s %s with %q = %d %s, want %d", i, s.method, s.path, s.token, status, body, s.want)
				}
				if s.wantCode != "" {
					if e := decodeError(t, body); e.Code != s.wantCode {
						t.Fatalf("step %d: code %q, want %q", i, e.Code, s.wantCode)
					}
				}
			}
		})
	}
}

// TestClaimServedAfterClientGone: a claim whose client closed its
// connection as soon as the request was written (the control plane dying
// right after it) is still served. The warm create commits the
// sandbox's row, with the claimed token, once the claim is written to
// the socket and before its answer (server/local adopt), so the row is
// good only if the sidecar takes a claim nobody waits for.
func TestClaimServedAfterClientGone(t *testing.T) {
	t.Parallel()
	const pool, fresh = "pool-token", "fresh-token"
	srv, _ := newServer(t, Options{Token: pool, Claimable: true})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"token":"` + fresh + `"}`
	req := "POST /claim HTTP/1.1\r\nHost: sidecar\r\n" + api.HeaderSidecarToken + ": " + pool + "\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil { // before the sidecar can have answered
		t.Fatal(err)
	}
	// Served in the background, at the server's pace: wait for the new
	// token to work (a request with the wrong token is no use of the
	// sidecar, so the waiting cannot refuse the claim).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		status, _ := call(t, "GET", srv.URL+"/metrics", http.Header{api.HeaderSidecarToken: {fresh}}, "")
		if status == http.StatusOK {
			break
		}
		if status != http.StatusUnauthorized || time.Now().After(deadline) {
			t.Fatalf("GET /metrics with the claimed token: %d; want 200 once the claim is served", status)
		}
	}
	if status, _ := call(t, "GET", srv.URL+"/metrics", http.Header{api.HeaderSidecarToken: {pool}}, ""); status != http.StatusUnauthorized {
		t.Errorf("GET /metrics with the pool token after the claim: %d, want 401", status)
	}
}
