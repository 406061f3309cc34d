package main

import (
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageSyncStop: a clean stop of boxkite-server with the local
// driver (SIGTERM, what `boxkite down` sends) takes its sandboxes down, so
// it gives each the final flush a destroy gives: a file a command wrote
// after the last flush is in the bucket once the server has stopped, and
// the restarted server reports the final flush done. The flush interval
// is an hour, so only that final flush can have stored it.
func TestStorageSyncStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	r := startStorageRun(t, "gcs")
	obj, stateDir, key, flags, srv, sb := r.obj, r.stateDir, r.key, r.flags, r.srv, r.sb
	ctx := context.Background()
	const content = "written by a command just before the stop\n"
	var res api.ExecResult
	if _, err := call(ctx, srv.base, key, "POST", "/v1/sandboxes/"+sb.ID+"/exec",
		api.ExecRequest{Command: "printf '" + strings.TrimSuffix(content, "\n") + "\\n' > /workspace/late.txt"}, &res); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}

	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.done:
	case <-time.After(60 * time.Second): // a hang guard
		t.Fatalf("boxkite-server did not stop after SIGTERM:\n%s", srv.out.String())
	}

	b, err := storagesync.Open(ctx, obj.Config)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	got := ""
	if err := b.List(ctx, "boxkite/", func(o storagesync.Object) error {
		stored = append(stored, o.Key)
		if strings.HasSuffix(o.Key, "/"+sb.ID+"/late.txt") {
			rc, err := b.Get(ctx, o.Key)
			if err != nil {
				return err
			}
			defer rc.Close()
			data, err := io.ReadAll(rc)
			got = string(data)
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != content {
		t.Fatalf("late.txt in the bucket after the stop: %q, want %q (stored: %q)\n%s", got, content, stored, srv.out.String())
	}

	srv = startServer(t, stateDir, key, flags...)
	var st api.SyncStatus
	if _, err := call(ctx, srv.base, key, "GET", "/v1/sandboxes/"+sb.ID+"/sync", nil, &st); err != nil {
		t.Fatal(err)
	}
	if st.State != "final" || !st.FinalFlushDone || st.LastError != "" {
		t.Errorf("sync after the restart: %+v, want final, its final flush done", st)
	}
}
