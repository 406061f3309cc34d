package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// fakeControlPlane answers the few routes the examples use, as boxkite-server would.
func fakeControlPlane() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(api.Sandbox{ID: "3f2a9c", Status: api.StatusActive, Size: api.SizeSmall})
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == api.ContentTypeNDJSON {
			ndjson(w,
				api.ExecEvent{Type: api.EventStdout, Data: "2\n"},
				api.ExecEvent{Type: api.EventExit, ExitCode: 0})
			return
		}
		json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 0, Stdout: "2\n"})
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: &api.Error{Code: api.CodeNotFound, Message: "sandbox not found"}})
	})
	return httptest.NewServer(mux)
}

func Example() {
	srv := fakeControlPlane() // in real use: the URL of boxkite-server
	defer srv.Close()

	ctx := context.Background()
	c := client.New(srv.URL, "bxk_live_example")
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Size: api.SizeSmall})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "python3 -c 'print(1+1)'"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
	// Output: exit 0: 2
}

func ExampleClient_ExecStream() {
	srv := fakeControlPlane()
	defer srv.Close()

	c := client.New(srv.URL, "bxk_live_example")
	code, err := c.ExecStream(context.Background(), "3f2a9c", api.ExecRequest{Command: "echo 2", Timeout: 60},
		func(ev api.ExecEvent) error {
			// Output arrives as the command produces it.
			if ev.Type == api.EventStderr {
				_, err := os.Stderr.WriteString(ev.Data)
				return err
			}
			_, err := os.Stdout.WriteString(ev.Data)
			return err
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit code", code)
	// Output:
	// 2
	// exit code 0
}

func ExampleClient_Sandbox_notFound() {
	srv := fakeControlPlane()
	defer srv.Close()

	c := client.New(srv.URL, "bxk_live_example")
	_, err := c.Sandbox(context.Background(), "nope")
	// Branch on the stable code, never on the message.
	if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeNotFound {
		fmt.Println("no such sandbox; HTTP status", e.Status)
	}
	// Output: no such sandbox; HTTP status 404
}
