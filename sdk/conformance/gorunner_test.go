package conformance_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sdk/conformance"
)

var update = flag.Bool("update", false, "rewrite generated files")

// goSkip are the calls the Go client has no counterpart of, with why; the
// case is reported as a runner error, so cases.json must skip it for go.
type goCall func(ctx context.Context, c *client.Client, a args) (any, error)

// args reads a case's arguments.
type args map[string]any

func (a args) s(k string) string { v, _ := a[k].(string); return v }
func (a args) i(k string) int    { v, _ := a[k].(float64); return int(v) }
func (a args) b(k string) bool   { v, _ := a[k].(bool); return v }

func (a args) content() []byte {
	if b64 := a.s("content_b64"); b64 != "" {
		b, _ := base64.StdEncoding.DecodeString(b64)
		return b
	}
	return bytes.Repeat([]byte(a.s("repeat")), a.i("size")/len(a.s("repeat"))+1)[:a.i("size")]
}

func digest(r io.ReadCloser, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return map[string]any{"size": len(b), "sha256": hex.EncodeToString(sum[:]), "head_hex": hex.EncodeToString(b[:min(2, len(b))])}, nil
}

func none(err error) (any, error) { return nil, err }

// goCalls maps the suite's calls to the Go client.
var goCalls = map[string]goCall{
	"health":        func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.Health(ctx) },
	"account.get":   func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.Account(ctx) },
	"account.usage": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.Usage(ctx) },
	"sandboxes.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		if key := a.s("idempotency_key"); key != "" {
			ctx = client.WithIdempotencyKey(ctx, key)
		}
		return c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: a.s("label"), LifetimeMinutes: a.i("lifetime_minutes")})
	},
	"sandboxes.get": func(ctx context.Context, c *client.Client, a args) (any, error) { return c.Sandbox(ctx, a.s("id")) },
	"sandboxes.list": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ListSandboxes(ctx, a.b("active_only"))
	},
	"sandboxes.page": func(ctx context.Context, c *client.Client, a args) (any, error) {
		p, err := c.ListSandboxPage(ctx, client.SandboxListOptions{ActiveOnly: a.b("active_only"), Limit: a.i("limit"), Cursor: a.s("cursor")})
		if err != nil {
			return nil, err
		}
		out := map[string]any{"sandboxes": p.Sandboxes, "next_cursor": nil}
		if p.Next != "" {
			out["next_cursor"] = p.Next
		}
		return out, nil
	},
	"sandboxes.all": func(ctx context.Context, c *client.Client, a args) (any, error) {
		ids := []string{}
		for sb, err := range c.Sandboxes(ctx, a.b("active_only"), a.i("page_size")) {
			if err != nil {
				return nil, err
			}
			ids = append(ids, sb.ID)
		}
		return map[string]any{"ids": ids}, nil
	},
	"sandboxes.extend": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ExtendSandbox(ctx, a.s("id"), a.i("lifetime_minutes"))
	},
	// The secrets routes through client.Do, until client/ wraps them.
	"secrets.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return rawJSON(ctx, c, http.MethodPost, "/v1/secrets", map[string]any{"name": a["name"], "value": a["value"], "allowed_hosts": a["allowed_hosts"]})
	},
	"secrets.list": func(ctx context.Context, c *client.Client, _ args) (any, error) {
		return rawJSON(ctx, c, http.MethodGet, "/v1/secrets", nil)
	},
	"secrets.update": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return rawJSON(ctx, c, http.MethodPut, "/v1/secrets/"+url.PathEscape(a.s("id")), map[string]any{"value": a["value"]})
	},
	"secrets.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return rawJSON(ctx, c, http.MethodDelete, "/v1/secrets/"+url.PathEscape(a.s("id")), nil)
	},
	"sandbox.http_request": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return rawJSON(ctx, c, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(a.s("id"))+"/http-request", map[string]any{"url": a["url"], "headers": a["headers"]})
	},
	"sandboxes.pause": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.PauseSandbox(ctx, a.s("id"), a.s("mode"))
	},
	"sandboxes.resume": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ResumeSandbox(ctx, a.s("id"))
	},
	"sandboxes.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteSandbox(ctx, a.s("id")))
	},
	"sandboxes.fork": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ForkSandbox(ctx, a.s("id"), a.i("count"))
	},
	"snapshots.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.CreateSnapshot(ctx, a.s("id"), a.s("label"))
	},
	"snapshots.list": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Snapshots(ctx, a.s("id"))
	},
	"snapshots.get": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Snapshot(ctx, a.s("snapshot_id"))
	},
	"snapshots.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteSnapshot(ctx, a.s("snapshot_id")))
	},
	"snapshots.restore": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.RestoreSnapshot(ctx, a.s("snapshot_id"), a.s("label"))
	},
	"sandbox.exec": func(ctx context.Context, c *client.Client, a args) (any, error) {
		env := map[string]string{}
		if m, ok := a["env"].(map[string]any); ok {
			for k, v := range m {
				env[k] = fmt.Sprint(v)
			}
		}
		return c.Exec(ctx, a.s("id"), api.ExecRequest{Command: a.s("command"), Timeout: a.i("timeout"), Stdin: a.s("stdin"), Cwd: a.s("cwd"), Env: env})
	},
	"sandbox.exec_stream": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var events []api.ExecEvent
		res, err := c.ExecStreamResult(ctx, a.s("id"), api.ExecRequest{Command: a.s("command")}, func(e api.ExecEvent) error {
			events = append(events, e)
			return nil
		})
		if err != nil {
			return nil, err
		}
		// The Go client hands the exit event back as the result.
		events = append(events, api.ExecEvent{Type: "exit", ExitCode: res.ExitCode, DurationMS: res.DurationMS})
		return map[string]any{"events": events}, nil
	},
	"sandbox.exec_signal": func(ctx context.Context, c *client.Client, a args) (any, error) {
		// Ctrl-C: signal once the command printed, read the stream to its end.
		var (
			execID   string
			events   []api.ExecEvent
			signaled *api.ExecSignalResult
		)
		after, _ := a["after_exit"].(bool)
		res, err := c.ExecStreamStarted(ctx, a.s("id"), api.ExecRequest{Command: a.s("command")}, func(id string) { execID = id }, func(e api.ExecEvent) error {
			events = append(events, e)
			if !after && signaled == nil && e.Type == "stdout" {
				var err error
				signaled, err = c.SignalExec(ctx, a.s("id"), execID, a.s("signal"))
				return err
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		events = append(events, api.ExecEvent{Type: "exit", ExitCode: res.ExitCode, DurationMS: res.DurationMS})
		if after {
			if signaled, err = c.SignalExec(ctx, a.s("id"), execID, a.s("signal")); err != nil {
				return nil, err
			}
		}
		return map[string]any{"exec_id": execID, "signaled": signaled, "events": events}, nil
	},
	"sandbox.stats": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.SandboxStats(ctx, a.s("id"))
	},
	"files.write": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.WriteFile(ctx, a.s("id"), api.FileCreateRequest{Path: a.s("path"), Content: a.s("content")})
	},
	"files.view": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.View(ctx, a.s("id"), api.ViewRequest{Path: a.s("path")})
	},
	"files.str_replace": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.StrReplace(ctx, a.s("id"), api.StrReplaceRequest{Path: a.s("path"), OldStr: a.s("old_str"), NewStr: a.s("new_str")})
	},
	"files.ls": func(ctx context.Context, c *client.Client, a args) (any, error) {
		r, err := c.Ls(ctx, a.s("id"), api.LsRequest{Path: a.s("path")})
		if err != nil {
			return nil, err
		}
		return r.Entries, nil
	},
	"files.glob": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Glob(ctx, a.s("id"), api.GlobRequest{Pattern: a.s("pattern"), Path: a.s("path")})
	},
	"files.grep": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Grep(ctx, a.s("id"), api.GrepRequest{Pattern: a.s("pattern"), Path: a.s("path")})
	},
	"storage.status": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.SyncStatus(ctx, a.s("id"))
	},
	"storage.flush": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.FlushSync(ctx, a.s("id"))
	},
	"storage.files": func(ctx context.Context, c *client.Client, a args) (any, error) {
		out, err := c.StoredFiles(ctx, a.s("id"))
		if err != nil {
			return nil, err
		}
		return out.Files, nil
	},
	"storage.download": func(ctx context.Context, c *client.Client, a args) (any, error) {
		d, err := c.DownloadStored(ctx, a.s("id"), a.s("path"))
		if err != nil {
			return nil, err
		}
		m, err := digest(d, nil)
		delete(m, "head_hex")
		return m, err
	},
	"storage.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteStorage(ctx, a.s("id")))
	},
	"files.upload": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.UploadFile(ctx, a.s("id"), a.s("path"), bytes.NewReader(a.content()))
	},
	"files.download": func(ctx context.Context, c *client.Client, a args) (any, error) {
		d, err := c.DownloadFile(ctx, a.s("id"), a.s("path"))
		if err != nil {
			return nil, err
		}
		m, err := digest(d, nil)
		delete(m, "head_hex")
		return m, err
	},
	"files.upload_archive": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.UploadArchive(ctx, a.s("id"), a.s("path"), bytes.NewReader(a.content()))
	},
	"files.download_archive": func(ctx context.Context, c *client.Client, a args) (any, error) {
		download := c.DownloadArchive
		if a.b("gzip") {
			download = c.DownloadArchiveGzip
		}
		d, err := download(ctx, a.s("id"), a.s("path"))
		if err != nil {
			return nil, err
		}
		m, err := digest(d, nil)
		delete(m, "sha256")
		return m, err
	},
	"processes.start": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.StartProcess(ctx, a.s("id"), api.ProcessStartRequest{Command: a.s("command")})
	},
	"processes.stream": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var events []api.ProcessEvent
		exit, err := c.StreamProcess(ctx, a.s("id"), a.s("pid"), 0, func(e api.ProcessEvent) error {
			events = append(events, e)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if exit != nil && (len(events) == 0 || events[len(events)-1].Type != "exit") {
			events = append(events, *exit)
		}
		return map[string]any{"events": events}, nil
	},
	"processes.output": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ProcessOutput(ctx, a.s("id"), a.s("pid"), 0)
	},
	"processes.list": func(ctx context.Context, c *client.Client, a args) (any, error) {
		r, err := c.Processes(ctx, a.s("id"))
		if err != nil {
			return nil, err
		}
		return r.Processes, nil
	},
	"interpreter.exec": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.InterpreterExec(ctx, a.s("id"), api.InterpreterExecRequest{Code: a.s("code")})
	},
	"log.page": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Log(ctx, a.s("id"), a.i("limit"), a.i("offset"))
	},
	"log.all": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var all []api.LogEntry
		for {
			p, err := c.Log(ctx, a.s("id"), a.i("page_size"), len(all))
			if err != nil {
				return nil, err
			}
			all = append(all, p.Entries...)
			if len(p.Entries) == 0 || len(all) >= p.Total {
				return map[string]any{"entries": all}, nil
			}
		}
	},
	"log.follow": func(ctx context.Context, c *client.Client, a args) (any, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var entries []api.LogEntry
		errEnough := errors.New("enough")
		err := c.WatchLog(ctx, a.s("id"), a.s("last_event_id"), func(e api.LogEntry) error {
			entries = append(entries, e)
			if len(entries) == a.i("count") {
				return errEnough
			}
			return nil
		})
		if errors.Is(err, errEnough) {
			err = nil
		}
		return map[string]any{"entries": entries}, err
	},
	"volumes.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.CreateVolume(ctx, api.CreateVolumeRequest{Label: a.s("label")})
	},
	"volumes.get":  func(ctx context.Context, c *client.Client, a args) (any, error) { return c.GetVolume(ctx, a.s("id")) },
	"volumes.list": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.ListVolumes(ctx) },
	"volumes.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteVolume(ctx, a.s("id")))
	},
	"webhooks.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var types []string
		for _, t := range a["event_types"].([]any) {
			types = append(types, t.(string))
		}
		return c.CreateWebhook(ctx, api.CreateWebhookRequest{URL: a.s("url"), EventTypes: types, Description: a.s("description")})
	},
	"webhooks.get":  func(ctx context.Context, c *client.Client, a args) (any, error) { return c.GetWebhook(ctx, a.s("id")) },
	"webhooks.list": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.ListWebhooks(ctx) },
	"webhooks.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteWebhook(ctx, a.s("id")))
	},
	"webhooks.deliveries": func(ctx context.Context, c *client.Client, a args) (any, error) {
		limit := a.i("limit")
		if limit == 0 {
			limit = 20
		}
		return c.WebhookDeliveries(ctx, a.s("id"), limit, 0)
	},
	"webhooks.page": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return goPage[api.Webhook]("webhooks")(c.ListWebhookPage(ctx, client.ListOptions{Limit: a.i("limit"), Cursor: a.s("cursor")}))
	},
	"webhooks.all": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return goIDs(c.Webhooks(ctx, a.i("page_size")), func(w api.Webhook) string { return w.ID })
	},
	"webhooks.deliveries_page": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return goPage[api.WebhookDelivery]("deliveries")(c.ListWebhookDeliveryPage(ctx, a.s("id"), client.ListOptions{Limit: a.i("limit"), Cursor: a.s("cursor")}))
	},
	"webhooks.deliveries_all": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return goIDs(c.WebhookDeliveryPages(ctx, a.s("id"), a.i("page_size")), func(d api.WebhookDelivery) string { return d.ID })
	},
	"webhooks.test": func(ctx context.Context, c *client.Client, a args) (any, error) { return c.TestWebhook(ctx, a.s("id")) },
	"webhooks.redeliver": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.RedeliverWebhook(ctx, a.s("id"), a.s("delivery_id"))
	},
	"mcp_connections.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.CreateMCPConnection(ctx, api.CreateMCPConnectionRequest{Label: a.s("label"), CatalogID: a.s("catalog_id")})
	},
	"mcp_connections.get": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.GetMCPConnection(ctx, a.s("id"))
	},
	"mcp_connections.list": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.ListMCPConnections(ctx) },
	"mcp_connections.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteMCPConnection(ctx, a.s("id")))
	},
	"api_keys.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.CreateAPIKey(ctx, api.CreateAPIKeyRequest{Name: a.s("name"), Role: a.s("role")})
	},
	"api_keys.list": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.APIKeys(ctx) },
	"api_keys.revoke": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.RevokeAPIKey(ctx, a.s("id")))
	},
	"images.list": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.ListImages(ctx) },
	"images.get":  func(ctx context.Context, c *client.Client, a args) (any, error) { return c.GetImage(ctx, a.s("id")) },
	"images.page": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return goPage[api.Image]("images")(c.ListImagePage(ctx, client.ListOptions{Limit: a.i("limit"), Cursor: a.s("cursor")}))
	},
	"images.all": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return goIDs(c.Images(ctx, a.i("page_size")), func(img api.Image) string { return img.ID })
	},
	"images.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.CreateImage(ctx, api.CreateImageRequest{Label: a.s("label"), ImageSpec: api.ImageSpec{Base: a.s("base")}})
	},
	"images.import": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ImportImage(ctx, a.s("label"), bytes.NewReader(a.content()))
	},
	"images.logs": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var b strings.Builder
		err := c.ImageLogs(ctx, a.s("id"), false, &b)
		return map[string]any{"text": b.String()}, err
	},
	"images.audit_log": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ImageLog(ctx, a.s("id"), 0, 0)
	},
	"images.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.DeleteImage(ctx, a.s("id")))
	},
	"ready": func(ctx context.Context, c *client.Client, _ args) (any, error) {
		// client.Ready answers only an error: a nil one is the 200 "ready".
		if err := c.Ready(ctx); err != nil {
			return nil, err
		}
		return map[string]any{"status": "ready"}, nil
	},
	"account.update": func(ctx context.Context, c *client.Client, a args) (any, error) {
		scrub := a.b("scrub_output")
		return c.UpdateAccount(ctx, api.AccountUpdate{ScrubOutput: &scrub})
	},
	"account.host": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.Host(ctx) },
	"account.me": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return client.New(c.BaseURL, a.s("token")).AccountMe(ctx)
	},
	"auth.signup": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Signup(ctx, a.s("email"), a.s("password"))
	},
	"auth.login": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Login(ctx, a.s("email"), a.s("password"))
	},
	"ssh_keys.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.AddSSHKey(ctx, api.AddSSHKeyRequest{PublicKey: a.s("public_key"), Name: a.s("name")})
	},
	"ssh_keys.list": func(ctx context.Context, c *client.Client, _ args) (any, error) { return c.SSHKeys(ctx) },
	"ssh_keys.delete": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.RemoveSSHKey(ctx, a.s("id")))
	},
	"bastion.takeover_token": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.BastionTakeoverToken(ctx, api.BastionTokenRequest{SandboxID: a.s("sandbox_id"), PublicKey: a.s("public_key")})
	},
	"sandbox.takeover_token": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.TakeoverToken(ctx, a.s("id"), false)
	},
	"sandbox.takeover_recording": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return digest(c.TakeoverRecording(ctx, a.s("id"), a.s("recording_id")))
	},
	"files.watch": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.Watch(ctx, a.s("id"), api.WatchRequest{Path: a.s("path"), TimeoutSeconds: float64(a.i("timeout_seconds"))})
	},
	"files.present": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var paths []string
		for _, p := range a["filepaths"].([]any) {
			paths = append(paths, fmt.Sprint(p))
		}
		return c.PresentFiles(ctx, a.s("id"), api.PresentFilesRequest{Filepaths: paths})
	},
	"processes.input": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ProcessInput(ctx, a.s("id"), a.s("pid"), a.s("data"))
	},
	"processes.stop": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.StopProcess(ctx, a.s("id"), a.s("pid"))
	},
	"processes.kill_all": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.KillAllProcesses(ctx, a.s("id"))
	},
	"interpreter.status": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.InterpreterStatus(ctx, a.s("id"))
	},
	"interpreter.reset": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.InterpreterReset(ctx, a.s("id"))
	},
	"node_interpreter.exec": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.NodeInterpreterExec(ctx, a.s("id"), api.InterpreterExecRequest{Code: a.s("code")})
	},
	"node_interpreter.status": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.NodeInterpreterStatus(ctx, a.s("id"))
	},
	"node_interpreter.reset": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.NodeInterpreterReset(ctx, a.s("id"))
	},
	"sandbox.pty_exec": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.PTYExec(ctx, a.s("id"), api.PTYExecRequest{Command: a.s("command"), InputBytes: a.s("input_bytes")})
	},
	"previews.create": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.CreatePreview(ctx, a.s("id"), a.i("port"), api.CreatePreviewRequest{TTLSeconds: a.i("ttl_seconds")})
	},
	"previews.list": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.ListPreviews(ctx, a.s("id"))
	},
	"previews.revoke": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.RevokePreviews(ctx, a.s("id"), a.i("port")))
	},
	"browser.navigate": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var res api.BrowserNavigateResult
		return &res, c.Browser(ctx, a.s("id"), "navigate", api.BrowserNavigateRequest{URL: a.s("url")}, &res)
	},
	"browser.exec": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var res api.BrowserExecResult
		return &res, c.Browser(ctx, a.s("id"), "exec", api.BrowserExecRequest{Script: a.s("script")}, &res)
	},
	"browser.screenshot": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var res api.BrowserScreenshotResult
		return &res, c.Browser(ctx, a.s("id"), "screenshot", api.BrowserScreenshotRequest{}, &res)
	},
	"browser.close": func(ctx context.Context, c *client.Client, a args) (any, error) {
		var res api.BrowserCloseResult
		return &res, c.Browser(ctx, a.s("id"), "close", nil, &res)
	},
	"lsp.start": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.LSPStart(ctx, a.s("id"), api.LSPStartRequest{Language: a.s("language")})
	},
	"lsp.open": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.LSPOpen(ctx, a.s("id"), a.s("lsp_id"), api.LSPOpenRequest{Path: a.s("path"), Content: a.s("content")}))
	},
	"lsp.completion": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return c.LSPCompletion(ctx, a.s("id"), a.s("lsp_id"), api.LSPCompletionRequest{Path: a.s("path"), Line: a.i("line"), Character: a.i("character")})
	},
	"lsp.stop": func(ctx context.Context, c *client.Client, a args) (any, error) {
		return none(c.LSPStop(ctx, a.s("id"), a.s("lsp_id")))
	},
	"allowed_commands.get": func(ctx context.Context, c *client.Client, _ args) (any, error) {
		return c.AllowedCommands(ctx)
	},
	"allowed_commands.set": func(ctx context.Context, c *client.Client, a args) (any, error) {
		b, err := json.Marshal(a["rules"])
		if err != nil {
			return nil, err
		}
		var rules []api.CommandRule
		if err := json.Unmarshal(b, &rules); err != nil {
			return nil, err
		}
		return c.SetAllowedCommands(ctx, rules)
	},
	"allowed_commands.clear": func(ctx context.Context, c *client.Client, _ args) (any, error) {
		return none(c.ClearAllowedCommands(ctx))
	},
}

// rawJSON calls a route with client.Do: body as JSON, the answer decoded
// (nil when empty).
func rawJSON(ctx context.Context, c *client.Client, method, path string, body any) (any, error) {
	var r io.Reader
	h := http.Header{}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
		h.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(ctx, method, path, h, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(b, &v)
}

// runGo runs the suite with the Go client, in process, and returns the
// outcome lines a subprocess runner would print.
func runGo(t *testing.T, suite *conformance.Suite, srv *servers) [][]byte {
	t.Helper()
	clients := map[string]*client.Client{
		"":      client.New(srv.rec.URL, srv.main.APIKey),
		"main":  client.New(srv.rec.URL, srv.main.APIKey),
		"old":   client.New(srv.old.BaseURL, srv.old.APIKey),
		"flaky": client.New(srv.flakyURL, srv.main.APIKey),
		"html":  client.New(srv.htmlURL, srv.main.APIKey),
	}
	for _, c := range clients {
		c.MaxRetries = 3 // as the SDKs do by default; the Go client's default is none
	}
	saved := map[string]any{}
	var lines [][]byte
	for _, c := range suite.Cases {
		if _, ok := c.Skip["go"]; ok {
			continue
		}
		o := conformance.Outcome{Name: c.Name}
		start := time.Now()
		fn, ok := goCalls[c.Call]
		resolved, err := conformance.Resolve(map[string]any(c.Args), saved)
		switch {
		case !ok:
			o.Error = map[string]any{"code": "runner", "message": "the Go runner has no call " + c.Call}
		case err != nil:
			o.Error = map[string]any{"code": "runner", "message": err.Error()}
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			res, err := fn(ctx, clients[c.Server], args(resolved.(map[string]any)))
			cancel()
			o.Result, o.Error = goOutcome(t, res, err)
		}
		o.ElapsedMS = time.Since(start).Milliseconds()
		saved[c.Name] = o.Result
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	return lines
}

// goOutcome turns a Go call's answer into the JSON a runner reports. The
// Go client's errors print as "message [code]"; the CLI prints the hint
// on a line of its own, which display does too.
func goOutcome(t *testing.T, res any, err error) (any, map[string]any) {
	t.Helper()
	if err != nil {
		e, ok := errors.AsType[*api.Error](err)
		if !ok {
			return nil, map[string]any{"code": "transport", "message": err.Error()}
		}
		display := e.Error()
		if e.Hint != "" {
			display += "\nhint: " + e.Hint
		}
		return nil, map[string]any{"code": e.Code, "message": e.Message, "hint": e.Hint, "status": float64(e.Status), "request_id": e.RequestID, "details": e.Details, "display": display}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v, nil
}

// goPage is a page as the suite's page calls answer it: the items under
// key, and next_cursor (null on the last page).
func goPage[T any](key string) func(*client.Page[T], error) (any, error) {
	return func(p *client.Page[T], err error) (any, error) {
		if err != nil {
			return nil, err
		}
		out := map[string]any{key: p.Items, "next_cursor": nil}
		if p.Next != "" {
			out["next_cursor"] = p.Next
		}
		return out, nil
	}
}

// goIDs is the ids of every item of an iterator, as the suite's all calls
// answer them.
func goIDs[T any](items iter.Seq2[T, error], id func(T) string) (any, error) {
	ids := []string{}
	for it, err := range items {
		if err != nil {
			return nil, err
		}
		ids = append(ids, id(it))
	}
	return map[string]any{"ids": ids}, nil
}
