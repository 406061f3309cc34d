//! boxkite: a blocking Rust client of boxkite, the self-hostable sandbox
//! for agent code execution.
//!
//! ```no_run
//! let bk = boxkite::Client::from_env();
//! let sb = bk.sandboxes().create(&boxkite::CreateSandbox { label: Some("demo".into()), ..Default::default() })?;
//! println!("{}", sb.exec("echo hi")?.stdout);
//! sb.delete()?;
//! # Ok::<(), boxkite::Error>(())
//! ```
//!
//! Errors carry the API's stable `code` and its `hint`; 429 and 503 answers
//! are retried after Retry-After; creates send an Idempotency-Key; live
//! streams (exec output, the audit log) are iterators, and the audit log
//! follow reconnects with Last-Event-ID. See docs/sdks.md.

mod error;
mod http;
mod sandbox;
mod stream;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use error::{Error, Result, BAD_RESPONSE_HINT, CODE_BAD_RESPONSE, CODE_CONNECTION, CODE_SERVER_TOO_OLD, CODE_TIMEOUT};
pub use http::{version_tuple, Body, MIN_SERVER_VERSION, VERSION};
pub use sandbox::{Browser, ExecOptions, ExecStream, Files, Follow, Log, ProcessOptions, Processes, Sandbox, Storage};
pub use stream::{Event, Ndjson, Sse};

use http::{seg, Req, Transport, TEXT_TYPES};

/// A sandbox's record (GET /v1/sandboxes/{id}).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SandboxInfo {
    pub id: String,
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default)]
    pub size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_gb: Option<f64>,
    #[serde(default)]
    pub lifetime_minutes: i64,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub expires_at: String,
    #[serde(default)]
    pub destroyed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destroy_reason: Option<String>,
    /// The pause mode of a paused sandbox, and since when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_with: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<String>,
    /// Paused, not destroyed, when its lifetime ends.
    #[serde(default)]
    pub auto_pause: bool,
    /// The protocol version its sidecar stated (get only): below the
    /// server's, the sandbox runs an older sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar_protocol: Option<i64>,
    /// Why a running sandbox is frozen: "host_disk" or "clone_pool" (the
    /// disk that ran low); None when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen_reason: Option<String>,
}

/// The body of POST /v1/sandboxes; None fields take the server's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CreateSandbox {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_gb: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime_minutes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_connection_names: Option<Vec<String>>,
    /// Egress through the server's proxy to each "host" or "host:port" (admin keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress_hosts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_names: Option<Vec<String>>,
    /// Pause the sandbox when its lifetime ends instead of destroying it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_pause: Option<bool>,
    /// Sent as Idempotency-Key (a fresh one when None), not in the body.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

/// The result of an exec. The truncation fields are set when output was cut.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecResult {
    pub exit_code: i64,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    #[serde(default)]
    pub duration_ms: i64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// The answer of a streamed exec's signal: the signal went to the
/// command's process group; how the command took it shows in the
/// stream's exit event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecSignalResult {
    pub exec_id: String,
    pub signal: String,
}

/// One event of a streamed exec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ExecEvent {
    Stdout { data: String },
    Stderr { data: String },
    Exit {
        exit_code: i64,
        #[serde(default)]
        duration_ms: i64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    Error { error: Value },
}

/// One audit log entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub id: String,
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub account_id: String,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub detail: Value,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub output_truncated: bool,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub duration_ms: i64,
    #[serde(default)]
    pub row_hash: String,
    #[serde(default)]
    pub prev_hash: String,
    #[serde(default)]
    pub seq: i64,
}

/// A page of the audit log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogPage {
    pub entries: Vec<LogEntry>,
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
    #[serde(default)]
    pub head_seq: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub head_hash: String,
}

/// The client's settings; `Client::with` builds a client from them.
#[derive(Debug, Clone)]
pub struct Options {
    pub base_url: String,
    pub api_key: String,
    /// How long a call waits for its answer (exec adds the command's timeout).
    pub timeout: Duration,
    /// How often a 429 or 503 is retried, after Retry-After.
    pub max_retries: u32,
    /// The longest one wait before a retry.
    pub max_retry_wait: Duration,
}

impl Default for Options {
    fn default() -> Self {
        let (base_url, api_key) = config::resolve(None, None);
        Options { base_url, api_key, timeout: Duration::from_secs(120), max_retries: 3, max_retry_wait: Duration::from_secs(60) }
    }
}

/// A client of one boxkite control plane. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    t: Arc<Transport>,
}

impl Client {
    /// A client of base_url with api_key and the default options.
    pub fn new(base_url: &str, api_key: &str) -> Self {
        Client::with(Options { base_url: base_url.to_string(), api_key: api_key.to_string(), ..Options::default() })
    }

    /// A client from BOXKITE_BASE_URL and BOXKITE_API_KEY, else what
    /// `boxkite up` wrote under ~/.boxkite (BOXKITE_HOME).
    pub fn from_env() -> Self {
        Client::with(Options::default())
    }

    pub fn with(o: Options) -> Self {
        let agent = ureq::AgentBuilder::new().timeout_connect(Duration::from_secs(10)).build();
        Client {
            t: Arc::new(Transport {
                base_url: o.base_url.trim_end_matches('/').to_string(),
                api_key: o.api_key,
                timeout: o.timeout,
                max_retries: o.max_retries,
                max_retry_wait: o.max_retry_wait,
                agent,
                server_version: Mutex::new(None),
            }),
        }
    }

    pub fn base_url(&self) -> &str {
        &self.t.base_url
    }

    /// The Boxkite-Version the server last sent.
    pub fn server_version(&self) -> Option<String> {
        self.t.server_version.lock().unwrap().clone()
    }

    pub fn health(&self) -> Result<Value> {
        let mut r = Req::new("GET", "/health");
        r.auth = false;
        self.t.json(r)
    }

    /// Readiness: the server's store and driver answer.
    pub fn ready(&self) -> Result<Value> {
        let mut r = Req::new("GET", "/health/ready");
        r.auth = false;
        self.t.json(r)
    }

    pub fn sandboxes(&self) -> Sandboxes {
        Sandboxes { t: self.t.clone() }
    }

    /// A handle for sandbox id, without a request.
    pub fn sandbox(&self, id: &str) -> Sandbox {
        Sandbox::new(self.t.clone(), SandboxInfo { id: id.to_string(), ..Default::default() })
    }

    pub fn volumes(&self) -> Collection {
        Collection { t: self.t.clone(), path: "/v1/volumes" }
    }

    /// Sandbox images: a Collection (create builds one from a spec), plus
    /// import, the build log and its audit log.
    pub fn images(&self) -> Images {
        Images { c: Collection { t: self.t.clone(), path: "/v1/images" } }
    }

    pub fn mcp_connections(&self) -> Collection {
        Collection { t: self.t.clone(), path: "/v1/mcp-connections" }
    }

    /// API keys; a created key's "key" is shown once. There is no GET of one key.
    pub fn api_keys(&self) -> Collection {
        Collection { t: self.t.clone(), path: "/v1/api-keys" }
    }

    /// Secrets: write-only values the server sends only to their allowed
    /// hosts (Sandbox::http_request substitutes {{secret:NAME}}). create
    /// takes {"name", "value", "allowed_hosts"}; an id may be the name.
    pub fn secrets(&self) -> Secrets {
        Secrets { c: Collection { t: self.t.clone(), path: "/v1/secrets" } }
    }

    /// Snapshots of the account's sandboxes (take one with
    /// Sandbox::snapshot): list, get, delete, and restore into a new sandbox.
    pub fn snapshots(&self) -> Snapshots {
        Snapshots { t: self.t.clone() }
    }

    /// Webhook subscriptions: create takes {"url", "event_types",
    /// "description"?, "payload_format"?, "hec_token"?} and answers the
    /// signing secret once; plus each one's deliveries, test and redelivery.
    pub fn webhooks(&self) -> Webhooks {
        Webhooks { c: Collection { t: self.t.clone(), path: "/v1/webhooks" } }
    }

    /// SSH keys for the bastion. There is no GET of one key.
    pub fn ssh_keys(&self) -> Collection {
        Collection { t: self.t.clone(), path: "/v1/account/ssh-keys" }
    }

    pub fn account(&self) -> Result<Value> {
        self.t.json(Req::new("GET", "/v1/account"))
    }

    /// The account of an access token (GET /v1/account/me): make the
    /// client with the access_token of signup or login as its key.
    pub fn account_me(&self) -> Result<Value> {
        self.t.json(Req::new("GET", "/v1/account/me"))
    }

    /// boxkite-bastion only (the client's key is the server's bastion key):
    /// a takeover token for the holder of a registered SSH key. body is
    /// {"sandbox_id", "public_key"} or {"sandbox_id", "token"}.
    pub fn bastion_takeover_token(&self, body: Value) -> Result<Value> {
        self.t.json(Req::new("POST", "/v1/bastion/takeover-token").json(body))
    }

    pub fn update_account(&self, scrub_output: bool) -> Result<Value> {
        self.t.json(Req::new("PATCH", "/v1/account").json(json!({ "scrub_output": scrub_output })))
    }

    pub fn usage(&self) -> Result<Value> {
        self.t.json(Req::new("GET", "/v1/usage"))
    }

    /// The host's use of its limits (admin keys).
    pub fn host(&self) -> Result<Value> {
        self.t.json(Req::new("GET", "/v1/host"))
    }

    pub fn allowed_commands(&self) -> Result<Value> {
        Ok(self.t.json(Req::new("GET", "/v1/account/allowed-commands"))?.get("rules").cloned().unwrap_or(json!([])))
    }

    pub fn set_allowed_commands(&self, rules: Value) -> Result<Value> {
        let v = self.t.json(Req::new("PUT", "/v1/account/allowed-commands").json(json!({ "rules": rules })))?;
        Ok(v.get("rules").cloned().unwrap_or(json!([])))
    }

    pub fn clear_allowed_commands(&self) -> Result<()> {
        self.t.json(Req::new("DELETE", "/v1/account/allowed-commands")).map(|_| ())
    }

    /// Creates an account; the answer carries an access token.
    pub fn signup(&self, email: &str, password: &str) -> Result<Value> {
        let mut r = Req::new("POST", "/v1/auth/signup").json(json!({ "email": email, "password": password }));
        r.auth = false;
        self.t.json(r)
    }

    pub fn login(&self, email: &str, password: &str) -> Result<Value> {
        let mut r = Req::new("POST", "/v1/auth/login").json(json!({ "email": email, "password": password }));
        r.auth = false;
        self.t.json(r)
    }
}

/// One page of Sandboxes::page.
#[derive(Debug)]
pub struct SandboxPage {
    pub sandboxes: Vec<Sandbox>,
    /// The cursor of the next page; None on the last one.
    pub next_cursor: Option<String>,
}

/// The account's sandboxes.
pub struct Sandboxes {
    t: Arc<Transport>,
}

impl Sandboxes {
    /// Creates a sandbox; it is active and ready for calls when this returns.
    pub fn create(&self, req: &CreateSandbox) -> Result<Sandbox> {
        let body = serde_json::to_value(req).map_err(|e| Error::new(CODE_BAD_RESPONSE, e.to_string(), ""))?;
        let mut r = Req::new("POST", "/v1/sandboxes").json(body);
        r.idempotency_key = Some(req.idempotency_key.clone().unwrap_or_else(http::idempotency_key));
        let info: SandboxInfo = self.t.decode(r)?;
        Ok(Sandbox::new(self.t.clone(), info))
    }

    /// The account's sandboxes, newest first.
    pub fn list(&self, active_only: bool) -> Result<Vec<Sandbox>> {
        let mut r = Req::new("GET", "/v1/sandboxes");
        if active_only {
            r = r.query("active_only", "true");
        }
        let infos: Vec<SandboxInfo> = self.t.decode(r)?;
        Ok(infos.into_iter().map(|i| Sandbox::new(self.t.clone(), i)).collect())
    }

    /// One page of the account's sandboxes, newest first: at most limit
    /// (1..1000), after the page whose next_cursor is cursor. next_cursor
    /// is None on the last page.
    pub fn page(&self, active_only: bool, limit: u32, cursor: Option<&str>) -> Result<SandboxPage> {
        let mut r = Req::new("GET", "/v1/sandboxes").query("limit", limit);
        if active_only {
            r = r.query("active_only", "true");
        }
        if let Some(c) = cursor {
            r = r.query("cursor", c);
        }
        let (v, next_cursor) = self.t.json_with_link(r)?;
        let infos: Vec<SandboxInfo> = serde_json::from_value(v).map_err(|e| Error::new(CODE_BAD_RESPONSE, format!("decode the answer: {}", e), ""))?;
        Ok(SandboxPage { sandboxes: infos.into_iter().map(|i| Sandbox::new(self.t.clone(), i)).collect(), next_cursor })
    }

    /// Every sandbox of the account, newest first, read page_size at a
    /// time (0: 100, as the Go client). A sandbox created meanwhile is not
    /// seen, and none is seen twice. The first error ends the iteration.
    pub fn all(&self, active_only: bool, page_size: u32) -> impl Iterator<Item = Result<Sandbox>> + '_ {
        let page_size = if page_size == 0 { 100 } else { page_size };
        pages(move |cursor| self.page(active_only, page_size, cursor))
    }

    pub fn get(&self, id: &str) -> Result<Sandbox> {
        let info: SandboxInfo = self.t.decode(Req::new("GET", format!("/v1/sandboxes/{}", seg(id))))?;
        Ok(Sandbox::new(self.t.clone(), info))
    }

    pub fn delete(&self, id: &str) -> Result<()> {
        self.t.json(Req::new("DELETE", format!("/v1/sandboxes/{}", seg(id)))).map(|_| ())
    }
}

/// The account's snapshots; each is its JSON record ({id, session_id,
/// label, status, size_bytes, method, created_at, …}).
pub struct Snapshots {
    t: Arc<Transport>,
}

impl Snapshots {
    /// The account's snapshots, newest first; of one sandbox with Some(id).
    pub fn list(&self, sandbox_id: Option<&str>) -> Result<Vec<Value>> {
        let path = match sandbox_id {
            Some(id) => format!("/v1/sandboxes/{}/snapshots", seg(id)),
            None => "/v1/snapshots".to_string(),
        };
        json_array(self.t.json(Req::new("GET", path.clone()))?, &path)
    }

    pub fn get(&self, id: &str) -> Result<Value> {
        self.t.json(Req::new("GET", format!("/v1/snapshots/{}", seg(id))))
    }

    /// Deletes a snapshot; sandboxes restored from it keep their files.
    pub fn delete(&self, id: &str) -> Result<()> {
        self.t.json(Req::new("DELETE", format!("/v1/snapshots/{}", seg(id)))).map(|_| ())
    }

    /// A new sandbox with the snapshot's files.
    pub fn restore(&self, id: &str, label: Option<&str>) -> Result<Sandbox> {
        let body = match label {
            Some(l) => json!({ "label": l }),
            None => json!({}),
        };
        let mut r = Req::new("POST", format!("/v1/snapshots/{}/restore", seg(id))).json(body);
        r.idempotency_key = Some(http::idempotency_key());
        let info: SandboxInfo = self.t.decode(r)?;
        Ok(Sandbox::new(self.t.clone(), info))
    }
}

/// The elements of a JSON array answer (null is none).
pub(crate) fn json_array(v: Value, what: &str) -> Result<Vec<Value>> {
    match v {
        Value::Array(v) => Ok(v),
        Value::Null => Ok(vec![]),
        other => Err(Error::new(CODE_BAD_RESPONSE, format!("GET {}: want an array, got {}", what, other), "")),
    }
}

/// One page of a paged list of JSON records (Images::page, Webhooks::page,
/// Webhooks::deliveries_page).
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Value>,
    /// The cursor of the next page; None on the last one.
    pub next_cursor: Option<String>,
}

/// A page pages() walks: its items and the cursor of the next page.
trait Paged {
    type Item;
    fn split(self) -> (Vec<Self::Item>, Option<String>);
}

impl Paged for Page {
    type Item = Value;
    fn split(self) -> (Vec<Value>, Option<String>) {
        (self.items, self.next_cursor)
    }
}

impl Paged for SandboxPage {
    type Item = Sandbox;
    fn split(self) -> (Vec<Sandbox>, Option<String>) {
        (self.sandboxes, self.next_cursor)
    }
}

/// Every item of the pages read(cursor) gives, in order. The first error
/// ends the iteration.
fn pages<'a, P: Paged + 'a>(mut read: impl FnMut(Option<&str>) -> Result<P> + 'a) -> impl Iterator<Item = Result<P::Item>> + 'a {
    let mut buf: std::collections::VecDeque<P::Item> = Default::default();
    let mut cursor: Option<String> = None;
    let mut done = false;
    std::iter::from_fn(move || loop {
        if let Some(v) = buf.pop_front() {
            return Some(Ok(v));
        }
        if done {
            return None;
        }
        match read(cursor.as_deref()) {
            Err(e) => {
                done = true;
                return Some(Err(e));
            }
            Ok(p) => {
                let (items, next) = p.split();
                done = next.is_none();
                cursor = next;
                buf.extend(items);
            }
        }
    })
}

impl Collection {
    /// One page of a list at path: limit, cursor and the query given, the
    /// answer's rel="next" Link as next_cursor.
    fn page_at(&self, mut r: Req<'_>, what: &str, limit: Option<u32>, cursor: Option<&str>) -> Result<Page> {
        if let Some(l) = limit {
            r = r.query("limit", l);
        }
        if let Some(c) = cursor {
            r = r.query("cursor", c);
        }
        let (v, next_cursor) = self.t.json_with_link(r)?;
        Ok(Page { items: json_array(v, what)?, next_cursor })
    }

    /// One page of the account's items (images, webhooks), newest first:
    /// at most limit (1..1000), after the page whose next_cursor is cursor.
    fn list_page(&self, limit: u32, cursor: Option<&str>) -> Result<Page> {
        self.page_at(Req::new("GET", self.path), self.path, Some(limit), cursor)
    }

    /// Every item of the account, newest first, page_size (0: 100, as the
    /// Go client) at a time: one made meanwhile is not seen, none twice.
    fn list_all(&self, page_size: u32) -> impl Iterator<Item = Result<Value>> + '_ {
        let page_size = if page_size == 0 { 100 } else { page_size };
        pages(move |cursor| self.list_page(page_size, cursor))
    }
}

/// A REST collection under one path (volumes, images, MCP connections, API
/// keys, SSH keys): create, list, get, delete. A new resource is one more
/// constructor on Client naming its path.
pub struct Collection {
    t: Arc<Transport>,
    path: &'static str,
}

impl Collection {
    /// Creates an item from a JSON body, with a fresh Idempotency-Key.
    pub fn create(&self, body: Value) -> Result<Value> {
        self.create_with_key(body, &http::idempotency_key())
    }

    /// Creates an item; a retry with the same key runs once.
    pub fn create_with_key(&self, body: Value, idempotency_key: &str) -> Result<Value> {
        let mut r = Req::new("POST", self.path).json(body);
        r.idempotency_key = Some(idempotency_key.to_string());
        self.t.json(r)
    }

    /// Every item of the account, newest first.
    pub fn list(&self) -> Result<Vec<Value>> {
        json_array(self.t.json(Req::new("GET", self.path))?, self.path)
    }

    /// One item. For API keys, SSH keys and secrets, which have no GET of one item, the list is searched.
    pub fn get(&self, id: &str) -> Result<Value> {
        if self.path == "/v1/api-keys" || self.path == "/v1/account/ssh-keys" || self.path == "/v1/secrets" {
            return self.list()?.into_iter().find(|v| v["id"] == id || v["name"] == id).ok_or_else(|| {
                let mut e = Error::new("not_found", format!("no {} item {}", self.path, id), "list them first");
                e.status = 404;
                e
            });
        }
        self.t.json(Req::new("GET", format!("{}/{}", self.path, seg(id))))
    }

    pub fn delete(&self, id: &str) -> Result<()> {
        self.t.json(Req::new("DELETE", format!("{}/{}", self.path, seg(id)))).map(|_| ())
    }
}

/// The account's secrets: a Collection (no GET of one: get searches the
/// list), plus update.
pub struct Secrets {
    c: Collection,
}

impl std::ops::Deref for Secrets {
    type Target = Collection;
    fn deref(&self) -> &Collection {
        &self.c
    }
}

impl Secrets {
    /// Replaces a secret's value (and allowed_hosts when the body has them):
    /// {"value", "allowed_hosts"}.
    pub fn update(&self, id: &str, body: Value) -> Result<Value> {
        self.c.t.json(Req::new("PUT", format!("{}/{}", self.c.path, seg(id))).json(body))
    }
}

/// Webhook subscriptions: a Collection, plus a subscription's deliveries,
/// a test event and redelivery (docs/webhooks.md).
pub struct Webhooks {
    c: Collection,
}

impl std::ops::Deref for Webhooks {
    type Target = Collection;
    fn deref(&self) -> &Collection {
        &self.c
    }
}

impl Webhooks {
    /// One page of the subscriptions the key sees, newest first: at most
    /// limit (1..1000), after the page whose next_cursor is cursor.
    pub fn page(&self, limit: u32, cursor: Option<&str>) -> Result<Page> {
        self.c.list_page(limit, cursor)
    }

    /// Every subscription the key sees, newest first, page_size (0: 100) at a time.
    pub fn all(&self, page_size: u32) -> impl Iterator<Item = Result<Value>> + '_ {
        self.c.list_all(page_size)
    }

    /// A page of the subscription's deliveries, newest first (limit 1..100; None: the server's 20).
    pub fn deliveries(&self, id: &str, limit: Option<u32>, offset: Option<u32>) -> Result<Vec<Value>> {
        let path = format!("{}/{}/deliveries", self.c.path, seg(id));
        let mut r = Req::new("GET", path.clone());
        if let Some(o) = offset {
            r = r.query("offset", o);
        }
        self.c.page_at(r, &path, limit, None).map(|p| p.items)
    }

    /// A page of the subscription's deliveries, newest first: limit
    /// (1..100; None: the server's 20) after the page whose next_cursor is
    /// cursor (None: the newest).
    pub fn deliveries_page(&self, id: &str, limit: Option<u32>, cursor: Option<&str>) -> Result<Page> {
        let path = format!("{}/{}/deliveries", self.c.path, seg(id));
        self.c.page_at(Req::new("GET", path.clone()), &path, limit, cursor)
    }

    /// Every delivery of the subscription, newest first, page_size (0 or
    /// more than 100: 100) at a time: one queued meanwhile is not seen,
    /// none twice.
    pub fn all_deliveries<'a>(&'a self, id: &'a str, page_size: u32) -> impl Iterator<Item = Result<Value>> + 'a {
        let page_size = if page_size == 0 || page_size > 100 { 100 } else { page_size };
        pages(move |cursor| self.deliveries_page(id, Some(page_size), cursor))
    }

    /// Queues a webhook.test event for this subscription; returns the delivery.
    pub fn test(&self, id: &str) -> Result<Value> {
        self.c.t.json(Req::new("POST", format!("{}/{}/test", self.c.path, seg(id))))
    }

    /// Sends a delivered or failed delivery's event again (same event_id); returns the new delivery.
    pub fn redeliver(&self, id: &str, delivery_id: &str) -> Result<Value> {
        self.c.t.json(Req::new("POST", format!("{}/{}/deliveries/{}/redeliver", self.c.path, seg(id), seg(delivery_id))))
    }
}

/// Sandbox images: create (a build from a spec: {"label", "base",
/// "apt_packages", …}), list, get and delete as for any Collection, and
/// the calls only images have.
pub struct Images {
    c: Collection,
}

impl std::ops::Deref for Images {
    type Target = Collection;
    fn deref(&self) -> &Collection {
        &self.c
    }
}

impl Images {
    /// One page of the account's images, newest first: at most limit
    /// (1..1000), after the page whose next_cursor is cursor.
    pub fn page(&self, limit: u32, cursor: Option<&str>) -> Result<Page> {
        self.c.list_page(limit, cursor)
    }

    /// Every image of the account, newest first, page_size (0: 100) at a time.
    pub fn all(&self, page_size: u32) -> impl Iterator<Item = Result<Value>> + '_ {
        self.c.list_all(page_size)
    }

    /// Imports an OCI image layout tar or a docker save archive; the image
    /// comes back queued (poll get until it is completed or failed).
    pub fn import(&self, archive: &[u8], label: Option<&str>) -> Result<Value> {
        self.import_body(Body::Bytes(archive), label)
    }

    /// Imports an archive read from r, streamed.
    pub fn import_reader<'a>(&self, r: impl std::io::Read + 'a, label: Option<&str>) -> Result<Value> {
        self.import_body(Body::Reader(Box::new(r)), label)
    }

    fn import_body(&self, body: Body<'_>, label: Option<&str>) -> Result<Value> {
        let mut r = Req::new("POST", "/v1/images/import").header("Content-Type", "application/x-tar").timeout(None);
        if let Some(l) = label {
            r = r.query("label", l);
        }
        r.body = body;
        self.c.t.json(r)
    }

    /// The build's log as text, so far.
    pub fn logs(&self, id: &str) -> Result<String> {
        let resp = self.c.t.send(Req::new("GET", format!("/v1/images/{}/logs", seg(id))).stream_types(TEXT_TYPES))?;
        resp.into_string().map_err(|e| Error::new(CODE_CONNECTION, format!("read the log of image {}: {}", id, e), ""))
    }

    /// The build's log as it is written, until the build ends.
    pub fn follow_logs(&self, id: &str) -> Result<Box<dyn std::io::Read + Send + Sync>> {
        let resp = self.c.t.send(Req::new("GET", format!("/v1/images/{}/logs", seg(id))).query("follow", "1").stream_types(TEXT_TYPES).timeout(None))?;
        Ok(Box::new(resp.into_reader()))
    }

    /// A page of the build's audit log (its egress decisions and outcome).
    pub fn audit_log(&self, id: &str, limit: i64, offset: i64) -> Result<LogPage> {
        let mut r = Req::new("GET", format!("/v1/images/{}/log", seg(id)));
        if limit > 0 {
            r = r.query("limit", limit);
        }
        if offset > 0 {
            r = r.query("offset", offset);
        }
        self.c.t.decode(r)
    }
}

mod config {
    //! Where the client finds its server and key when none is given.

    fn read(path: &std::path::Path) -> (Option<String>, Option<String>) {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let (mut url, mut key) = (None, None);
        for line in text.lines() {
            let (k, v) = match line.split_once('=') {
                Some(kv) => kv,
                None => continue,
            };
            let v = v.trim();
            if v.len() < 2 || !(v.starts_with('"') && v.ends_with('"') || v.starts_with('\'') && v.ends_with('\'')) {
                continue;
            }
            let v = v[1..v.len() - 1].to_string();
            match k.trim() {
                "base_url" => url = Some(v),
                "api_key" => key = Some(v),
                _ => {}
            }
        }
        (url, key)
    }

    /// The URL and key: the arguments, else BOXKITE_BASE_URL and
    /// BOXKITE_API_KEY, else config.toml (when it names both) or local.toml
    /// under BOXKITE_HOME (~/.boxkite).
    pub fn resolve(url: Option<String>, key: Option<String>) -> (String, String) {
        let env = |n: &str| std::env::var(n).ok().filter(|s| !s.is_empty());
        let url = url.or_else(|| env("BOXKITE_BASE_URL"));
        let key = key.or_else(|| env("BOXKITE_API_KEY"));
        if let (Some(u), Some(k)) = (&url, &key) {
            return (u.clone(), k.clone());
        }
        let home = env("BOXKITE_HOME").map(std::path::PathBuf::from).unwrap_or_else(|| std::path::PathBuf::from(env("HOME").unwrap_or_default()).join(".boxkite"));
        let hosted = read(&home.join("config.toml"));
        let files = if hosted.0.is_some() && hosted.1.is_some() { hosted } else { read(&home.join("local.toml")) };
        (url.or(files.0).unwrap_or_else(|| "http://127.0.0.1:8090".to_string()), key.or(files.1).unwrap_or_default())
    }
}
