package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

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
	mux.HandleFunc("POST /v1/sandboxes/{id}/files", func(w http.ResponseWriter, r *http.Request) {
		var req api.FileCreateRequest
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode(api.FileCreateResult{Path: "/workspace/" + req.Path, Size: int64(len(req.Content)), Created: true})
	})
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files/raw", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(api.FileWriteResult{Path: r.URL.Query().Get("path"), Size: n})
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

func ExampleClient_Bind() {
	srv := fakeControlPlane()
	defer srv.Close()

	c := client.New(srv.URL, "bxk_live_example")
	// A bound handle makes the same calls without repeating the id; it is
	// also what package tools takes as a sandbox.
	sb := c.Bind("3f2a9c")
	res, err := sb.WriteFile(context.Background(), api.FileCreateRequest{Path: "notes.txt", Content: "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Path, res.Size)
	// Output: /workspace/notes.txt 5
}

func ExampleClient_UploadFile() {
	srv := fakeControlPlane()
	defer srv.Close()

	c := client.New(srv.URL, "bxk_live_example")
	// Any io.Reader streams as it is read: an *os.File of any size, a
	// pipe, a network body.
	data := strings.NewReader("a large file's bytes")
	res, err := c.UploadFile(context.Background(), "3f2a9c", "/workspace/data.bin", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Path, res.Size)
	// Output: /workspace/data.bin 20
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
