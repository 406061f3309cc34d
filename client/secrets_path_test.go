package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestSecretNamedDots: a secret may be named "." or ".." (the documented
// names allow dots), and UpdateSecret and DeleteSecret reach it by that
// name, as the server's router sees it, not "/v1/secrets/.." cleaned to
// "/v1/" (session 20, state20: `boxkite secrets rm ..` said "no route
// for DELETE /v1" and exited 3).
func TestSecretNamedDots(t *testing.T) {
	var got []string
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/secrets/{id}", func(w http.ResponseWriter, r *http.Request) {
		got = append(got, "PUT "+r.PathValue("id"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"name":"x"}`))
	})
	mux.HandleFunc("DELETE /v1/secrets/{id}", func(w http.ResponseWriter, r *http.Request) {
		got = append(got, "DELETE "+r.PathValue("id"))
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(srv.URL, "k")
	for _, name := range []string{".", "..", "a.b", "a/b"} {
		if _, err := c.UpdateSecret(context.Background(), name, api.UpdateSecretRequest{Value: "v"}); err != nil {
			t.Errorf("UpdateSecret(%q): %v", name, err)
		}
		if err := c.DeleteSecret(context.Background(), name); err != nil {
			t.Errorf("DeleteSecret(%q): %v", name, err)
		}
	}
	want := []string{"PUT .", "DELETE .", "PUT ..", "DELETE ..", "PUT a.b", "DELETE a.b", "PUT a/b", "DELETE a/b"}
	if len(got) != len(want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, got[i], want[i])
		}
	}
}
