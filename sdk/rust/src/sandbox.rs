//! The Sandbox handle: exec, files, processes, audit log.

use std::io::Read;
use std::sync::Arc;
use std::thread::sleep;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, Result, CODE_CONNECTION, CODE_SERVER_TOO_OLD};
use crate::http::{seg, Body, Req, Transport, NDJSON_TYPES, SSE_TYPES};
use crate::stream::{Ndjson, Sse};
use crate::{ExecEvent, ExecResult, ExecSignalResult, LogEntry, LogPage, SandboxInfo};

/// An exec call waits for the command's own timeout plus this.
const EXEC_MARGIN: Duration = Duration::from_secs(30);
const DEFAULT_EXEC_TIMEOUT: u64 = 30;
/// How often in a row a live stream is reopened when it breaks without delivering.
const STREAM_RETRIES: u32 = 5;
const STREAM_PAUSE: Duration = Duration::from_millis(500);

/// Options of an exec; None fields take the server's defaults.
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// Seconds, 1..3600 (default 30).
    pub timeout: Option<u64>,
    pub stdin: Option<String>,
    pub cwd: Option<String>,
    pub env: Option<std::collections::BTreeMap<String, String>>,
    pub description: Option<String>,
    pub max_output_bytes: Option<u64>,
    /// "truncate" (default) or "stop".
    pub on_output_limit: Option<String>,
    /// Environment variable → secret name: the secret's value in this
    /// command's environment only (docs/secrets.md, servers started with
    /// --allow-secret-env); echoes are redacted from the result. The
    /// server refuses it on exec_stream.
    pub secret_env: Option<std::collections::BTreeMap<String, String>>,
}

/// Options of a background process; the defaults are the server's.
#[derive(Debug, Clone, Default)]
pub struct ProcessOptions {
    pub description: Option<String>,
    /// Seconds it may run; None is the server's default.
    pub max_runtime_seconds: Option<u64>,
    /// Start it again when the sandbox resumes from a filesystem pause,
    /// which ends every process.
    pub restart: bool,
}

impl ExecOptions {
    fn body(&self, command: &str) -> Value {
        let mut b = json!({ "command": command });
        let o = b.as_object_mut().unwrap();
        if let Some(v) = self.timeout {
            o.insert("timeout".into(), json!(v));
        }
        if let Some(v) = &self.stdin {
            o.insert("stdin".into(), json!(v));
        }
        if let Some(v) = &self.cwd {
            o.insert("cwd".into(), json!(v));
        }
        if let Some(v) = &self.env {
            o.insert("env".into(), json!(v));
        }
        if let Some(v) = &self.description {
            o.insert("description".into(), json!(v));
        }
        if let Some(v) = self.max_output_bytes {
            o.insert("max_output_bytes".into(), json!(v));
        }
        if let Some(v) = &self.on_output_limit {
            o.insert("on_output_limit".into(), json!(v));
        }
        if let Some(v) = &self.secret_env {
            o.insert("secret_env".into(), json!(v));
        }
        b
    }

    fn wait(&self) -> Duration {
        Duration::from_secs(self.timeout.unwrap_or(DEFAULT_EXEC_TIMEOUT)) + EXEC_MARGIN
    }
}

/// One sandbox: `info` is its record as last fetched.
#[derive(Clone)]
pub struct Sandbox {
    t: Arc<Transport>,
    pub info: SandboxInfo,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("info", &self.info).finish()
    }
}

impl Sandbox {
    pub(crate) fn new(t: Arc<Transport>, info: SandboxInfo) -> Self {
        Sandbox { t, info }
    }

    pub fn id(&self) -> &str {
        &self.info.id
    }

    fn path(&self, sub: &str) -> String {
        format!("/v1/sandboxes/{}{}", seg(&self.info.id), sub)
    }

    fn post(&self, sub: &str, body: Value) -> Result<Value> {
        self.t.json(Req::new("POST", self.path(sub)).json(body))
    }

    pub fn refresh(&mut self) -> Result<&SandboxInfo> {
        self.info = self.t.decode(Req::new("GET", self.path("")))?;
        Ok(&self.info)
    }

    pub fn delete(&self) -> Result<()> {
        self.t.json(Req::new("DELETE", self.path(""))).map(|_| ())
    }

    pub fn extend(&mut self, lifetime_minutes: i64) -> Result<&SandboxInfo> {
        self.info = self.t.decode(Req::new("POST", self.path("/extend")).json(json!({ "lifetime_minutes": lifetime_minutes })))?;
        Ok(&self.info)
    }

    /// Pauses the sandbox (mode "freeze", the default when None,
    /// "filesystem" or "checkpoint"); its lifetime stops counting until
    /// resume.
    pub fn pause(&self, mode: Option<&str>) -> Result<SandboxInfo> {
        let body = match mode {
            Some(m) => json!({ "mode": m }),
            None => json!({}),
        };
        self.t.decode(Req::new("POST", self.path("/pause")).json(body))
    }

    /// Resumes a paused sandbox: same id and endpoints.
    pub fn resume(&self) -> Result<SandboxInfo> {
        self.t.decode(Req::new("POST", self.path("/resume")))
    }

    /// Snapshots the sandbox's filesystem, crash-consistent; the answer is
    /// the snapshot's record. Client::snapshots lists, restores and
    /// deletes them. At most 10 per account by default (429
    /// snapshot_limit_reached).
    pub fn snapshot(&self, label: Option<&str>) -> Result<Value> {
        let body = match label {
            Some(l) => json!({ "label": l }),
            None => json!({}),
        };
        let mut r = Req::new("POST", self.path("/snapshots")).json(body);
        r.idempotency_key = Some(crate::http::idempotency_key());
        self.t.json(r)
    }

    /// The sandbox's snapshots, newest first.
    pub fn snapshots(&self) -> Result<Vec<Value>> {
        let path = self.path("/snapshots");
        crate::json_array(self.t.json(Req::new("GET", path.clone()))?, &path)
    }

    /// Forks the sandbox count ways: each child starts from its files as
    /// they are now, its writes seen by no other.
    pub fn fork(&self, count: u32) -> Result<Vec<Sandbox>> {
        let mut r = Req::new("POST", self.path("/fork")).json(json!({ "count": count }));
        r.idempotency_key = Some(crate::http::idempotency_key());
        let infos: Vec<SandboxInfo> = self.t.decode(r)?;
        Ok(infos.into_iter().map(|i| Sandbox::new(self.t.clone(), i)).collect())
    }

    pub fn stats(&self) -> Result<Value> {
        self.t.json(Req::new("GET", self.path("/stats")))
    }

    /// A single-use token for the sandbox's terminal (admin keys).
    pub fn takeover_token(&self, read_only: bool) -> Result<Value> {
        self.post("/takeover-token", if read_only { json!({ "read_only": true }) } else { json!({}) })
    }

    /// The control plane makes an HTTP request for the sandbox, each
    /// {{secret:NAME}} in url, headers or body replaced by that secret's
    /// value, only to the secret's allowed hosts; echoes of a value are
    /// redacted. body is {"url", "method", "headers", "body", "timeout"}.
    pub fn http_request(&self, body: Value) -> Result<Value> {
        let wait = body["timeout"].as_u64().unwrap_or(15);
        self.t.json(Req::new("POST", self.path("/http-request")).json(body).timeout(Some(Duration::from_secs(wait + 30))))
    }

    /// A takeover's asciicast v2 recording (servers started with takeover
    /// recording on); a takeover_end audit entry's detail names it. Works
    /// after the sandbox is gone.
    pub fn takeover_recording(&self, recording_id: &str) -> Result<Vec<u8>> {
        let resp = self.t.send(Req::new("GET", self.path(&format!("/takeover-recordings/{}", seg(recording_id)))).timeout(None))?;
        let mut out = Vec::new();
        resp.into_reader().read_to_end(&mut out).map_err(|e| Error::new(CODE_CONNECTION, format!("download recording {}: {}", recording_id, e), ""))?;
        Ok(out)
    }

    /// Runs a shell command with the default options.
    pub fn exec(&self, command: &str) -> Result<ExecResult> {
        self.exec_with(command, &ExecOptions::default())
    }

    pub fn exec_with(&self, command: &str, o: &ExecOptions) -> Result<ExecResult> {
        self.t.decode(Req::new("POST", self.path("/exec")).json(o.body(command)).timeout(Some(o.wait())))
    }

    /// Runs a shell command and streams its output as it happens.
    pub fn exec_stream(&self, command: &str) -> Result<ExecStream> {
        self.exec_stream_with(command, &ExecOptions::default())
    }

    pub fn exec_stream_with(&self, command: &str, o: &ExecOptions) -> Result<ExecStream> {
        let resp = self.t.send(Req::new("POST", self.path("/exec")).json(o.body(command)).header("Accept", "application/x-ndjson").stream_types(NDJSON_TYPES).timeout(Some(o.wait())))?;
        let exec_id = resp.header("X-Exec-Id").unwrap_or("").to_string();
        Ok(ExecStream {
            events: Ndjson::new(Box::new(resp.into_reader())),
            exec_id,
            sb: self.clone(),
            result: None,
            stdout: String::new(),
            stderr: String::new(),
        })
    }

    /// Sends signal ("SIGINT", "SIGTERM", "SIGHUP" or "SIGKILL") to the
    /// process group of the streamed exec exec_id (`ExecStream::exec_id`)
    /// while it runs; `ExecStream::signal` is the same. A command that
    /// ended is a not_found Error; another signal, a validation_error.
    pub fn signal_exec(&self, exec_id: &str, signal: &str) -> Result<ExecSignalResult> {
        self.t.decode(Req::new("POST", self.path(&format!("/exec/{}/signal", seg(exec_id)))).json(json!({ "signal": signal })))
    }

    pub fn files(&self) -> Files<'_> {
        Files { sb: self }
    }

    pub fn processes(&self) -> Processes<'_> {
        Processes { sb: self }
    }

    pub fn log(&self) -> Log<'_> {
        Log { sb: self }
    }

    /// The workspace synced to the server's object storage (when the
    /// operator configured one; else every call is 503
    /// storage_unavailable). The files stay listable and downloadable
    /// after the sandbox is destroyed.
    pub fn storage(&self) -> Storage<'_> {
        Storage { sb: self }
    }

    /// Runs Python code in the sandbox's persistent interpreter.
    pub fn interpreter_exec(&self, code: &str) -> Result<Value> {
        self.post("/interpreter/exec", json!({ "code": code }))
    }

    pub fn interpreter_reset(&self) -> Result<Value> {
        self.post("/interpreter/reset", json!({}))
    }

    pub fn interpreter_status(&self) -> Result<Value> {
        self.t.json(Req::new("GET", self.path("/interpreter/status")))
    }

    /// Runs JavaScript in the sandbox's persistent Node.js interpreter: the
    /// result is util.inspect of the last value, a promise awaited.
    pub fn node_interpreter_exec(&self, code: &str) -> Result<Value> {
        self.post("/node-interpreter/exec", json!({ "code": code }))
    }

    pub fn node_interpreter_reset(&self) -> Result<Value> {
        self.post("/node-interpreter/reset", json!({}))
    }

    pub fn node_interpreter_status(&self) -> Result<Value> {
        self.t.json(Req::new("GET", self.path("/node-interpreter/status")))
    }

    /// Runs one command (split into words, no shell) on a terminal of its
    /// own. body is {"command", "input_bytes" (base64), "timeout_seconds"};
    /// the answer's exit_code is null when it timed out.
    pub fn pty_exec(&self, body: Value) -> Result<Value> {
        let wait = body["timeout_seconds"].as_f64().unwrap_or(30.0).min(120.0);
        self.t.json(Req::new("POST", self.path("/pty-exec")).json(body).timeout(Some(Duration::from_secs_f64(wait + 30.0))))
    }

    /// The sandbox's headless Chromium (the browser tools; the image must
    /// have chromium). Page failures come back in the answer's error with
    /// a 200; only a bad request is an Err.
    pub fn browser(&self) -> Browser<'_> {
        Browser { sb: self }
    }

    /// A preview URL of port, valid ttl_seconds (30..86400; None: 3600):
    /// url (host-based), path_url and the token, shown once.
    pub fn preview_create(&self, port: u16, ttl_seconds: Option<u32>) -> Result<Value> {
        let body = match ttl_seconds {
            Some(s) => json!({ "ttl_seconds": s }),
            None => json!({}),
        };
        self.post(&format!("/preview/{}", port), body)
    }

    /// The live previews, without tokens.
    pub fn previews(&self) -> Result<Vec<Value>> {
        let path = self.path("/previews");
        crate::json_array(self.t.json(Req::new("GET", path.clone()))?, &path)
    }

    /// Revokes every live preview of port: their URLs answer 401 at once.
    pub fn preview_revoke(&self, port: u16) -> Result<()> {
        self.t.json(Req::new("DELETE", self.path(&format!("/preview/{}", port)))).map(|_| ())
    }

    /// Starts a language server; the answer's lsp_id names it.
    pub fn lsp_start(&self, language: &str) -> Result<Value> {
        self.post("/lsp/start", json!({ "language": language }))
    }

    pub fn lsp_open(&self, lsp_id: &str, path: &str, content: &str) -> Result<Value> {
        self.post(&format!("/lsp/{}/open", seg(lsp_id)), json!({ "path": path, "content": content }))
    }

    pub fn lsp_completion(&self, lsp_id: &str, path: &str, line: u32, character: u32) -> Result<Value> {
        self.post(&format!("/lsp/{}/completion", seg(lsp_id)), json!({ "path": path, "line": line, "character": character }))
    }

    pub fn lsp_stop(&self, lsp_id: &str) -> Result<Value> {
        self.post(&format!("/lsp/{}/stop", seg(lsp_id)), json!({}))
    }
}

/// The events of a streamed exec: stdout and stderr while the command runs,
/// then its exit. An error event (the sandbox was lost mid-exec) comes out
/// as an Err. After the loop, `result`, `stdout` and `stderr` hold what came.
/// While it runs, `signal("SIGINT")` is Ctrl-C: the command's process group
/// gets the signal, and the stream ends as the command does.
pub struct ExecStream {
    events: Ndjson<ExecEvent>,
    /// The id the answer's X-Exec-Id header named ("" from a server or
    /// sidecar older than it), which `signal` uses.
    pub exec_id: String,
    sb: Sandbox,
    pub result: Option<ExecEvent>,
    pub stdout: String,
    pub stderr: String,
}

impl ExecStream {
    /// Sends signal ("SIGINT", "SIGTERM", "SIGHUP" or "SIGKILL") to the
    /// command's process group while it runs; how the command takes it
    /// shows in the exit event. A command that ended is a not_found Error;
    /// a server too old to name its streamed execs is server_too_old.
    pub fn signal(&self, signal: &str) -> Result<ExecSignalResult> {
        if self.exec_id.is_empty() {
            return Err(Error::new(
                CODE_SERVER_TOO_OLD,
                "this exec stream has no id to signal it by (no X-Exec-Id header)",
                "upgrade the boxkite server (and recreate the sandbox, for its sidecar) to signal a streamed exec",
            ));
        }
        self.sb.signal_exec(&self.exec_id, signal)
    }

    /// The exit code, once the exit event has come.
    pub fn exit_code(&self) -> Option<i64> {
        match self.result {
            Some(ExecEvent::Exit { exit_code, .. }) => Some(exit_code),
            _ => None,
        }
    }
}

impl Iterator for ExecStream {
    type Item = Result<ExecEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        let ev = match self.events.next()? {
            Ok(ev) => ev,
            Err(e) => return Some(Err(e)),
        };
        match &ev {
            ExecEvent::Stdout { data } => self.stdout.push_str(data),
            ExecEvent::Stderr { data } => self.stderr.push_str(data),
            ExecEvent::Exit { .. } => self.result = Some(ev.clone()),
            ExecEvent::Error { error } => return Some(Err(event_error(error))),
        }
        Some(Ok(ev))
    }
}

/// The error a stream's {"type":"error"} event carries (its `error`).
fn event_error(error: &Value) -> Error {
    let s = |k: &str| error.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let code = s("code");
    let mut e = Error::new(if code.is_empty() { "internal_error" } else { &code }, s("message"), s("hint"));
    if e.message.is_empty() {
        e.message = "the stream ended with an error".to_string();
    }
    e.request_id = s("request_id");
    e.status = match e.code.as_str() {
        "sandbox_lost" => 410,
        "sandbox_operation_failed" => 502,
        _ => 0,
    };
    e
}

/// Files of one sandbox. Relative paths are under /workspace.
/// The sandbox's headless Chromium: see Sandbox::browser.
pub struct Browser<'a> {
    sb: &'a Sandbox,
}

/// Chromium's start, and the server's own margin, on top of a browser
/// call's timeout.
const BROWSER_MARGIN_SECS: u64 = 90;

impl Browser<'_> {
    fn call(&self, action: &str, body: Value, secs: u64) -> Result<Value> {
        let req = Req::new("POST", self.sb.path(&format!("/browser/{}", action))).json(body);
        self.sb.t.json(req.timeout(Some(Duration::from_secs(secs + BROWSER_MARGIN_SECS))))
    }

    /// Opens a URL. body is {"url", "wait_until", "timeout_seconds"}; the
    /// answer has title, url, status and error.
    pub fn navigate(&self, body: Value) -> Result<Value> {
        let secs = body["timeout_seconds"].as_u64().unwrap_or(30);
        self.call("navigate", body, secs)
    }

    /// Runs JavaScript in the page. body is {"script", "timeout_seconds"};
    /// the answer's result is its value as JSON.
    pub fn exec(&self, body: Value) -> Result<Value> {
        let secs = body["timeout_seconds"].as_u64().unwrap_or(10);
        self.call("exec", body, secs)
    }

    /// A PNG of the page, base64 in image_base64.
    pub fn screenshot(&self, full_page: bool) -> Result<Value> {
        self.call("screenshot", if full_page { json!({ "full_page": true }) } else { json!({}) }, 120)
    }

    /// Stops Chromium: status is closed or not_running.
    pub fn close(&self) -> Result<Value> {
        self.call("close", json!({}), 0)
    }
}

pub struct Files<'a> {
    sb: &'a Sandbox,
}

impl Files<'_> {
    /// Writes a text file, on disk before the answer.
    pub fn write(&self, path: &str, content: &str) -> Result<Value> {
        self.sb.post("/files", json!({ "path": path, "content": content }))
    }

    /// A file with line numbers, or a directory's entries.
    pub fn view(&self, path: &str) -> Result<Value> {
        self.sb.post("/files/view", json!({ "path": path }))
    }

    pub fn view_range(&self, path: &str, start: i64, end: i64) -> Result<Value> {
        self.sb.post("/files/view", json!({ "path": path, "view_range": [start, end] }))
    }

    pub fn str_replace(&self, path: &str, old_str: &str, new_str: &str) -> Result<Value> {
        self.sb.post("/files/str-replace", json!({ "path": path, "old_str": old_str, "new_str": new_str }))
    }

    /// A directory's entries. A file is refused (`not_a_directory`), a
    /// missing path is `not_found`.
    pub fn ls(&self, path: &str) -> Result<Vec<Value>> {
        let v = self.sb.post("/files/ls", json!({ "path": path }))?;
        Ok(v.get("entries").and_then(|e| e.as_array()).cloned().unwrap_or_default())
    }

    pub fn glob(&self, pattern: &str, path: Option<&str>) -> Result<Value> {
        self.sb.post("/files/glob", json!({ "pattern": pattern, "path": path.unwrap_or("") }))
    }

    pub fn grep(&self, pattern: &str, path: Option<&str>) -> Result<Value> {
        self.sb.post("/files/grep", json!({ "pattern": pattern, "path": path.unwrap_or("") }))
    }

    /// Waits up to timeout_seconds for changes under path.
    pub fn watch(&self, path: &str, timeout_seconds: f64) -> Result<Value> {
        let wait = Duration::from_secs_f64(timeout_seconds) + EXEC_MARGIN;
        self.sb.t.json(Req::new("POST", self.sb.path("/files/watch")).json(json!({ "path": path, "timeout_seconds": timeout_seconds })).timeout(Some(wait)))
    }

    /// Marks files as outputs for the user.
    pub fn present(&self, filepaths: &[&str]) -> Result<Value> {
        self.sb.post("/files/present", json!({ "filepaths": filepaths }))
    }

    /// Writes bytes to path.
    pub fn upload(&self, path: &str, data: &[u8]) -> Result<Value> {
        let mut r = Req::new("PUT", self.sb.path("/files/raw")).query("path", path).header("Content-Type", "application/octet-stream");
        r.body = Body::Bytes(data);
        self.sb.t.json(r)
    }

    /// Streams r into path (not retried: a reader cannot be replayed).
    pub fn upload_reader(&self, path: &str, reader: impl Read) -> Result<Value> {
        let mut r = Req::new("PUT", self.sb.path("/files/raw")).query("path", path).header("Content-Type", "application/octet-stream").timeout(None);
        r.body = Body::Reader(Box::new(reader));
        self.sb.t.json(r)
    }

    /// A file's bytes.
    pub fn download(&self, path: &str) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.open(path)?.read_to_end(&mut out).map_err(|e| Error::new(CODE_CONNECTION, format!("download {}: {}", path, e), ""))?;
        Ok(out)
    }

    /// A file's bytes as a stream.
    pub fn open(&self, path: &str) -> Result<Box<dyn Read + Send + Sync>> {
        let resp = self.sb.t.send(Req::new("GET", self.sb.path("/files/raw")).query("path", path).timeout(None))?;
        Ok(Box::new(resp.into_reader()))
    }

    /// Extracts a tar or tar.gz under directory.
    pub fn upload_archive(&self, directory: &str, archive: &[u8]) -> Result<Value> {
        let mut r = Req::new("POST", self.sb.path("/files/archive")).query("path", directory).header("Content-Type", "application/gzip");
        r.body = Body::Bytes(archive);
        self.sb.t.json(r)
    }

    /// directory as a tar (gzip: tar.gz), names relative to it.
    pub fn download_archive(&self, directory: &str, gzip: bool) -> Result<Vec<u8>> {
        let mut r = Req::new("GET", self.sb.path("/files/archive")).query("path", directory).timeout(None);
        if gzip {
            r = r.query("gzip", "1");
        }
        let mut out = Vec::new();
        self.sb.t.send(r)?.into_reader().read_to_end(&mut out).map_err(|e| Error::new(CODE_CONNECTION, format!("download {}: {}", directory, e), ""))?;
        Ok(out)
    }
}

/// The sandbox's workspace in object storage: see Sandbox::storage.
pub struct Storage<'a> {
    sb: &'a Sandbox,
}

impl Storage<'_> {
    /// The sync's state: state (syncing, final, deleted), pending,
    /// last_flush_at, last_error, next_attempt_at, …
    pub fn status(&self) -> Result<Value> {
        self.sb.t.json(Req::new("GET", self.sb.path("/sync")))
    }

    /// Flushes the workspace now, without waiting for files to settle, and
    /// returns the state after it (502 storage_failed when the store refuses).
    pub fn flush(&self) -> Result<Value> {
        self.sb.t.json(Req::new("POST", self.sb.path("/sync/flush")))
    }

    /// The stored files: path (relative to /workspace), size, modified_at.
    pub fn files(&self) -> Result<Vec<Value>> {
        let v = self.sb.t.json(Req::new("GET", self.sb.path("/storage/files")))?;
        Ok(v.get("files").and_then(|f| f.as_array()).cloned().unwrap_or_default())
    }

    /// A stored file's bytes (path relative to /workspace).
    pub fn download(&self, path: &str) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.open(path)?.read_to_end(&mut out).map_err(|e| Error::new(CODE_CONNECTION, format!("download {}: {}", path, e), ""))?;
        Ok(out)
    }

    /// A stored file's bytes as a stream.
    pub fn open(&self, path: &str) -> Result<Box<dyn Read + Send + Sync>> {
        let resp = self.sb.t.send(Req::new("GET", self.sb.path("/storage/files/raw")).query("path", path).timeout(None))?;
        Ok(Box::new(resp.into_reader()))
    }

    /// Deletes the stored files (a running sandbox is synced again from scratch).
    pub fn delete(&self) -> Result<()> {
        self.sb.t.json(Req::new("DELETE", self.sb.path("/storage"))).map(|_| ())
    }
}

/// Background processes of one sandbox.
pub struct Processes<'a> {
    sb: &'a Sandbox,
}

impl Processes<'_> {
    pub fn start(&self, command: &str) -> Result<Value> {
        self.start_with(command, &ProcessOptions::default())
    }

    pub fn start_with(&self, command: &str, o: &ProcessOptions) -> Result<Value> {
        let mut body = json!({ "command": command });
        if let Some(v) = &o.description {
            body["description"] = json!(v);
        }
        if let Some(v) = o.max_runtime_seconds {
            body["max_runtime_seconds"] = json!(v);
        }
        if o.restart {
            body["restart"] = json!(true);
        }
        self.sb.post("/processes", body)
    }

    pub fn list(&self) -> Result<Vec<Value>> {
        let v = self.sb.t.json(Req::new("GET", self.sb.path("/processes")))?;
        Ok(v.get("processes").and_then(|e| e.as_array()).cloned().unwrap_or_default())
    }

    pub fn output(&self, pid: &str, since_offset: i64) -> Result<Value> {
        self.sb.t.json(Req::new("GET", self.sb.path(&format!("/processes/{}/output", seg(pid)))).query("since_offset", since_offset))
    }

    /// The process's output events, then its exit event, until it ends.
    /// An error event ends it as an Err (sandbox_operation_failed: the
    /// stream was cut, a scrubbed stream's event over the cap it holds).
    pub fn stream(&self, pid: &str, since_offset: i64) -> Result<impl Iterator<Item = Result<Value>>> {
        let resp = self.sb.t.send(
            Req::new("GET", self.sb.path(&format!("/processes/{}/stream", seg(pid)))).query("since_offset", since_offset).header("Accept", "text/event-stream").stream_types(SSE_TYPES).timeout(None),
        )?;
        let mut done = false;
        Ok(Sse::new(Box::new(resp.into_reader())).map_while(move |ev| {
            if done {
                return None;
            }
            Some(ev.and_then(|ev| {
                let v: Value = serde_json::from_str(&ev.data).map_err(|e| Error::new(crate::CODE_BAD_RESPONSE, e.to_string(), ""))?;
                done = v["type"] == "exit" || v["type"] == "error";
                if v["type"] == "error" {
                    return Err(event_error(&v["error"]));
                }
                Ok(v)
            }))
        }))
    }

    pub fn input(&self, pid: &str, data: &str) -> Result<Value> {
        self.sb.post(&format!("/processes/{}/input", seg(pid)), json!({ "data": data }))
    }

    pub fn stop(&self, pid: &str) -> Result<Value> {
        self.sb.post(&format!("/processes/{}/stop", seg(pid)), json!({}))
    }

    pub fn kill_all(&self) -> Result<Value> {
        self.sb.post("/processes/kill-all", json!({}))
    }
}

/// The sandbox's hash-chained audit log.
pub struct Log<'a> {
    sb: &'a Sandbox,
}

impl Log<'_> {
    /// One page, oldest first.
    pub fn page(&self, limit: i64, offset: i64) -> Result<LogPage> {
        self.sb.t.decode(Req::new("GET", self.sb.path("/log")).query("limit", limit).query("offset", offset))
    }

    /// Every entry, oldest first, fetched page by page.
    pub fn entries(&self, page_size: i64) -> impl Iterator<Item = Result<LogEntry>> + '_ {
        let mut offset = 0;
        let mut buf: std::collections::VecDeque<LogEntry> = Default::default();
        let mut done = false;
        std::iter::from_fn(move || loop {
            if let Some(e) = buf.pop_front() {
                return Some(Ok(e));
            }
            if done {
                return None;
            }
            match self.page(page_size, offset) {
                Err(e) => {
                    done = true;
                    return Some(Err(e));
                }
                Ok(p) => {
                    offset += p.entries.len() as i64;
                    done = p.entries.is_empty() || offset >= p.total;
                    buf.extend(p.entries);
                }
            }
        })
    }

    /// Entries as they are written (server-sent events): the newest 100
    /// first, or those after last_event_id. A broken stream is reopened
    /// with Last-Event-ID, so no entry is missed or repeated. Runs until
    /// the caller stops iterating.
    pub fn follow(&self, last_event_id: Option<&str>) -> Follow {
        Follow { sb: self.sb.clone(), last: last_event_id.map(|s| s.to_string()), events: None, failures: 0 }
    }
}

/// The iterator of Log::follow.
pub struct Follow {
    sb: Sandbox,
    last: Option<String>,
    events: Option<Sse>,
    failures: u32,
}

impl Iterator for Follow {
    type Item = Result<LogEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(events) = &mut self.events {
                match events.next() {
                    Some(Ok(ev)) => {
                        if let Some(id) = ev.id {
                            self.last = Some(id);
                        }
                        self.failures = 0;
                        return Some(serde_json::from_str(&ev.data).map_err(|e| Error::new(crate::CODE_BAD_RESPONSE, e.to_string(), "")));
                    }
                    Some(Err(_)) | None => self.events = None,
                }
                self.failures += 1;
                if self.failures > STREAM_RETRIES {
                    return Some(Err(Error::new(CODE_CONNECTION, format!("sandbox {}: the watch stream keeps breaking", self.sb.id()), "check the server; follow(Some(last id)) resumes")));
                }
                sleep(STREAM_PAUSE * self.failures);
            }
            let mut r = Req::new("GET", self.sb.path("/watch")).header("Accept", "text/event-stream").stream_types(SSE_TYPES).timeout(None);
            if let Some(id) = &self.last {
                r = r.header("Last-Event-ID", id.clone());
            }
            match self.sb.t.send(r) {
                Ok(resp) => self.events = Some(Sse::new(Box::new(resp.into_reader()))),
                Err(e) if e.code == CODE_CONNECTION && self.failures < STREAM_RETRIES => {
                    self.failures += 1;
                    sleep(STREAM_PAUSE * self.failures);
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_without_exec_id_is_server_too_old() {
        // A server or sidecar older than X-Exec-Id names no exec: signal
        // says so instead of posting to a route that is not there.
        let sb = crate::Client::new("http://127.0.0.1:1", "k").sandbox("sbx_x");
        let stream = ExecStream { events: Ndjson::new(Box::new(std::io::empty())), exec_id: String::new(), sb, result: None, stdout: String::new(), stderr: String::new() };
        let err = stream.signal("SIGINT").unwrap_err();
        assert_eq!(err.code, CODE_SERVER_TOO_OLD);
        assert!(err.hint.contains("upgrade"), "{}", err.hint);
    }
}
