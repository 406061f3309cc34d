package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/images"
)

// TestImportArchiveTooBig: an import whose archive is declared past the
// 8 GiB bound is refused at once, 413 payload_too_large with a hint; it
// was read up to the bound and answered 500.
func TestImportArchiveTooBig(t *testing.T) {
	t.Parallel()
	e, imgs := newImagesEnv(t)
	// By hand: net/http's client would send the 9 GiB it declares.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/images/import HTTP/1.1\r\nHost: boxkite\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n", e.KeyA, int64(9)<<30)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env api.ErrorEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Error == nil {
		t.Fatalf("%d: %v", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || env.Error.Code != api.CodePayloadTooLarge || env.Error.Hint == "" {
		t.Errorf("a 9 GiB import = %d %+v, want 413 payload_too_large with a hint", resp.StatusCode, env.Error)
	}
	list, err := imgs.List(t.Context(), e.AcctA.ID)
	if err != nil || len(list) != 0 {
		t.Errorf("images after the refusal: %v, %v; want none", list, err)
	}
}

// newImagesEnv is an env whose server keeps images, in imgs.
func newImagesEnv(t *testing.T) (e *env, imgs *images.Manager) {
	t.Helper()
	st := openStore(t, t.TempDir())
	imgs, err := images.New(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWithStore(t, server.Config{Secrets: testSecrets(t, st), Images: imgs}, st), imgs
}
