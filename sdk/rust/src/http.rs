//! The transport over ureq: the error envelope, retries on 429/503 after
//! Retry-After, timeouts and the server version check.

use std::io::Read;
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::error::{media_type, Error, Result, CODE_BAD_RESPONSE, CODE_CONNECTION, CODE_SERVER_TOO_OLD, CODE_TIMEOUT, HTML_TYPES};

/// This crate's version, and the oldest boxkite-server release it covers.
/// Servers send their version in Boxkite-Version; "dev" builds and Go
/// pseudo-versions (v0.0.0-…) are not checked.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const MIN_SERVER_VERSION: &str = "0.1.0";

/// (major, minor, patch) of a release, None for builds not checked.
pub fn version_tuple(v: &str) -> Option<(u64, u64, u64)> {
    let v = v.trim();
    let v = v.strip_prefix('v').unwrap_or(v);
    let mut parts = v.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let patch = digits.parse().ok()?;
    let t = (major, minor, patch);
    if t == (0, 0, 0) && digits.len() < rest.len() {
        return None;
    }
    Some(t)
}

fn too_old(version: &str) -> bool {
    match (version_tuple(version), version_tuple(MIN_SERVER_VERSION)) {
        (Some(have), Some(want)) => have < want,
        _ => false,
    }
}

/// Seconds to wait from a Retry-After header of seconds (HTTP dates are
/// rare for rate limits and are taken as "now").
fn parse_retry_after(v: Option<&str>) -> Option<f64> {
    v.and_then(|s| s.trim().parse::<f64>().ok())
}

/// The 503 codes retried: the server cannot take the request now but
/// will. Others (secrets_unavailable: the server has no secrets key) would
/// get the same answer again. bad_response: a proxy's 503 page, its
/// backend away for now.
const RETRY_503_CODES: [&str; 5] = ["service_unavailable", "host_capacity", "audit_unavailable", "sidecar_not_configured", "bad_response"];

/// Whether a refusal is worth sending again: a 429 rate_limited (not a
/// fair-use limit such as concurrent_sandbox_limit_reached), a 503 of
/// RETRY_503_CODES, or either with Retry-After; never an answer whose
/// details say performed: true (done, only its audit entry is pending).
pub(crate) fn retryable(err: &Error) -> bool {
    if err.details.get("performed") == Some(&Value::Bool(true)) {
        return false;
    }
    match err.status {
        429 => err.code == "rate_limited" || err.retry_after.is_some(),
        503 => RETRY_503_CODES.contains(&err.code.as_str()) || err.retry_after.is_some(),
        _ => false,
    }
}

/// A request body.
pub enum Body<'a> {
    None,
    Json(Value),
    Bytes(&'a [u8]),
    Reader(Box<dyn Read + 'a>),
}

pub(crate) struct Req<'a> {
    pub method: &'a str,
    pub path: String,
    pub query: Vec<(&'a str, String)>,
    pub headers: Vec<(&'a str, String)>,
    pub body: Body<'a>,
    /// None: no overall deadline (streams).
    pub timeout: Option<Duration>,
    pub idempotency_key: Option<String>,
    pub auth: bool,
    /// The media types a streamed answer comes as: a 2xx answer of another
    /// type (a static site's page, another server's "200 OK" text) is
    /// bad_response, not a stream reader's parse error. None: any.
    pub stream_types: Option<&'static [&'static str]>,
}

/// The media types of the API's streams, for Req::stream_types.
pub(crate) const NDJSON_TYPES: &[&str] = &["application/x-ndjson", "application/json"]; // a server that does not stream answers JSON
pub(crate) const SSE_TYPES: &[&str] = &["text/event-stream"];
pub(crate) const TEXT_TYPES: &[&str] = &["text/plain"]; // an image's build log

impl<'a> Req<'a> {
    pub fn new(method: &'a str, path: impl Into<String>) -> Self {
        Req { method, path: path.into(), query: vec![], headers: vec![], body: Body::None, timeout: Some(Duration::ZERO), idempotency_key: None, auth: true, stream_types: None }
    }
    pub fn json(mut self, v: Value) -> Self {
        self.body = Body::Json(v);
        self
    }
    pub fn query(mut self, k: &'a str, v: impl ToString) -> Self {
        self.query.push((k, v.to_string()));
        self
    }
    pub fn header(mut self, k: &'a str, v: impl Into<String>) -> Self {
        self.headers.push((k, v.into()));
        self
    }
    pub fn timeout(mut self, t: Option<Duration>) -> Self {
        self.timeout = t;
        self
    }
    pub fn stream_types(mut self, types: &'static [&'static str]) -> Self {
        self.stream_types = Some(types);
        self
    }
}

/// Sends requests to one control plane.
pub(crate) struct Transport {
    pub base_url: String,
    pub api_key: String,
    pub timeout: Duration,
    pub max_retries: u32,
    pub max_retry_wait: Duration,
    pub agent: ureq::Agent,
    pub server_version: Mutex<Option<String>>,
}

/// A fresh Idempotency-Key: random enough that two creates never share one.
pub(crate) fn idempotency_key() -> String {
    let mut buf = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut buf);
    }
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut s = format!("bxk-rs-{:x}-", nanos);
    for b in buf {
        s.push_str(&format!("{:02x}", b));
    }
    s
}

impl Transport {
    fn backoff(&self, attempt: u32, retry_after: Option<f64>) -> Duration {
        let d = match retry_after {
            Some(s) => Duration::from_secs_f64(s),
            None => Duration::from_millis(500u64 << attempt.min(4)),
        };
        d.min(self.max_retry_wait)
    }

    /// Sends req; returns the 2xx answer unread.
    pub fn send(&self, mut req: Req) -> Result<ureq::Response> {
        let url = format!("{}{}", self.base_url, req.path);
        let replayable = !matches!(req.body, Body::Reader(_));
        let mut attempt = 0;
        loop {
            let mut r = self.agent.request(req.method, &url).set("User-Agent", &format!("boxkite-rust/{}", VERSION)).set("Accept", "application/json");
            if req.auth && !self.api_key.is_empty() {
                r = r.set("Authorization", &format!("Bearer {}", self.api_key));
            }
            for (k, v) in &req.query {
                r = r.query(k, v);
            }
            for (k, v) in &req.headers {
                r = r.set(k, v);
            }
            if let Some(k) = &req.idempotency_key {
                r = r.set("Idempotency-Key", k);
            }
            match req.timeout {
                Some(d) if d.is_zero() => r = r.timeout(self.timeout),
                Some(d) => r = r.timeout(d),
                None => {}
            }
            let sent = match std::mem::replace(&mut req.body, Body::None) {
                Body::None => r.call(),
                Body::Json(v) => {
                    let out = r.set("Content-Type", "application/json").send_string(&v.to_string());
                    req.body = Body::Json(v);
                    out
                }
                Body::Bytes(b) => {
                    req.body = Body::Bytes(b);
                    r.send_bytes(b)
                }
                Body::Reader(rd) => r.send(rd),
            };
            let (status, resp) = match sent {
                Ok(resp) => (resp.status(), resp),
                Err(ureq::Error::Status(code, resp)) => (code, resp),
                Err(ureq::Error::Transport(t)) => {
                    let msg = t.to_string();
                    if msg.contains("timed out") || msg.contains("Timeout") {
                        return Err(Error::new(CODE_TIMEOUT, format!("{} {}: no answer in time: {}", req.method, req.path, msg), "pass a larger timeout to the client or the call"));
                    }
                    let refused = msg.contains("Connection refused");
                    if refused && replayable && attempt < self.max_retries {
                        sleep(self.backoff(attempt, None));
                        attempt += 1;
                        continue;
                    }
                    return Err(Error::new(CODE_CONNECTION, format!("cannot reach the boxkite server at {}: {}", self.base_url, msg), "start it with `boxkite up`, or check BOXKITE_BASE_URL"));
                }
            };
            if let Some(v) = resp.header("Boxkite-Version") {
                *self.server_version.lock().unwrap() = Some(v.to_string());
                if too_old(v) {
                    return Err(Error::new(
                        CODE_SERVER_TOO_OLD,
                        format!("boxkite-server {} is older than {}, the oldest this SDK ({}) supports", v, MIN_SERVER_VERSION, VERSION),
                        format!("upgrade boxkite-server to {} or later, or use an SDK release that matches the server", MIN_SERVER_VERSION),
                    ));
                }
            }
            if (200..300).contains(&status) {
                // A web page (a static site answers 200 to every path) is no
                // file or stream of boxkite's, which sends files as
                // octet-stream; a stream must be its own media type.
                let ctype = resp.header("Content-Type");
                let media = media_type(ctype);
                if HTML_TYPES.contains(&media.as_str()) || req.stream_types.is_some_and(|types| !types.contains(&media.as_str())) {
                    return Err(Error::bad_response(&self.base_url, status, ctype, resp.header("X-Request-ID"), None));
                }
                return Ok(resp);
            }
            let rid = resp.header("X-Request-ID").map(|s| s.to_string());
            let ctype = resp.header("Content-Type").map(|s| s.to_string());
            let retry = parse_retry_after(resp.header("Retry-After"));
            let body = resp.into_string().unwrap_or_default();
            let err = Error::from_answer(&self.base_url, status, ctype.as_deref(), &body, rid.as_deref(), retry);
            if retryable(&err) && replayable && attempt < self.max_retries {
                sleep(self.backoff(attempt, err.retry_after));
                attempt += 1;
                continue;
            }
            return Err(err);
        }
    }

    /// Sends req and decodes its JSON answer (Null when empty).
    pub fn json(&self, req: Req) -> Result<Value> {
        self.json_with_link(req).map(|(v, _)| v)
    }

    /// json, with the cursor of the answer's rel="next" Link (a list's next page).
    pub fn json_with_link(&self, req: Req) -> Result<(Value, Option<String>)> {
        let (method, path) = (req.method.to_string(), req.path.clone());
        let resp = self.send(req)?;
        let next = resp.all("Link").into_iter().find_map(next_cursor);
        let status = resp.status();
        let ctype = resp.header("Content-Type").map(|s| s.to_string());
        let rid = resp.header("X-Request-ID").map(|s| s.to_string());
        let media = media_type(ctype.as_deref());
        let not_boxkite = || Error::bad_response(&self.base_url, status, ctype.as_deref(), rid.as_deref(), None);
        if HTML_TYPES.contains(&media.as_str()) {
            // A web page (a static site at the base URL answers 200 to
            // every path): no route of boxkite answers one.
            return Err(not_boxkite());
        }
        let text = resp.into_string().map_err(|e| Error::new(CODE_CONNECTION, format!("{} {}: read the answer: {}", method, path, e), ""))?;
        if text.is_empty() {
            return Ok((Value::Null, next));
        }
        let v = serde_json::from_str(&text).map_err(|e| {
            if media != "application/json" && !media.ends_with("+json") {
                return not_boxkite();
            }
            let mut err = Error::new(CODE_BAD_RESPONSE, format!("{} {}: the answer is not JSON: {}", method, path, e), "");
            err.status = status;
            err
        })?;
        Ok((v, next))
    }

    /// Sends req and decodes its JSON answer into T.
    pub fn decode<T: serde::de::DeserializeOwned>(&self, req: Req) -> Result<T> {
        let v = self.json(req)?;
        serde_json::from_value(v).map_err(|e| Error::new(CODE_BAD_RESPONSE, format!("decode the answer: {}", e), ""))
    }
}

/// The cursor query parameter of a Link header value's rel="next" target
/// (RFC 8288), percent-decoded.
pub(crate) fn next_cursor(link: &str) -> Option<String> {
    for part in link.split(',') {
        let mut pieces = part.split(';');
        let target = pieces.next()?.trim();
        let target = target.strip_prefix('<').and_then(|t| t.strip_suffix('>'));
        let is_next = pieces.any(|p| {
            let (name, val) = p.split_once('=').unwrap_or((p, ""));
            name.trim().eq_ignore_ascii_case("rel") && val.trim().trim_matches('"').split_whitespace().any(|r| r.eq_ignore_ascii_case("next"))
        });
        if let (Some(target), true) = (target, is_next) {
            let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
            return query.split('&').find_map(|kv| kv.strip_prefix("cursor=")).map(percent_decode);
        }
    }
    None
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One path segment, escaped.
pub(crate) fn seg(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{:02X}", b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(version_tuple("v1.2.3"), Some((1, 2, 3)));
        assert_eq!(version_tuple("0.4.0-rc1"), Some((0, 4, 0)));
        assert_eq!(version_tuple("v0.0.0-20250101000000-abcdef"), None);
        assert_eq!(version_tuple("dev"), None);
        assert!(too_old("0.0.1"));
        assert!(!too_old("dev"));
        assert!(!too_old("v0.1.0"));
        assert!(!too_old("1.0.0"));
    }

    #[test]
    fn retried() {
        let err = |status: u16, code: &str, details: Value, retry: Option<f64>| {
            let mut e = Error::new(code, "m", "");
            e.status = status;
            e.details = details;
            e.retry_after = retry;
            e
        };
        let cases = [
            (err(429, "rate_limited", Value::Null, Some(1.0)), true),
            (err(429, "concurrent_sandbox_limit_reached", Value::Null, None), false),
            (err(503, "host_capacity", Value::Null, None), true),
            (err(503, "audit_unavailable", serde_json::json!({ "performed": false }), None), true),
            (err(503, "audit_unavailable", serde_json::json!({ "performed": true }), None), false),
            (err(503, "secrets_unavailable", Value::Null, None), false),
            (err(503, "secrets_unavailable", Value::Null, Some(2.0)), true),
            (err(409, "conflict", Value::Null, Some(1.0)), false),
            (err(503, "bad_response", Value::Null, None), true),
            (err(502, "bad_response", Value::Null, None), false),
        ];
        for (e, want) in cases.iter() {
            assert_eq!(retryable(e), *want, "{} {}", e.status, e.code);
        }
    }

    #[test]
    fn not_boxkite() {
        let e = Error::from_answer("http://proxy.example", 502, Some("text/html; charset=utf-8"), "<html><body>Bad Gateway</body></html>", Some("r1"), None);
        assert_eq!(e.code, "bad_response");
        assert_eq!(e.status, 502);
        assert_eq!(e.message, "the server at http://proxy.example answered 502 text/html, not boxkite's JSON");
        assert!(e.hint.contains("any proxy in between"));
        assert!(!e.to_string().contains("<html>"));
        assert_eq!(e.request_id, "r1");
        let e = Error::from_answer("http://x", 503, None, "", None, None);
        assert_eq!(e.code, "service_unavailable");
        let e = Error::from_answer("http://x", 404, Some("application/json"), r#"{"error":{"code":"not_found","message":"no"}}"#, None, None);
        assert_eq!(e.code, "not_found");
    }

    #[test]
    fn links() {
        assert_eq!(next_cursor(r#"</v1/sandboxes?active_only=false&limit=2&cursor=a%2Bb_c>; rel="next""#), Some("a+b_c".to_string()));
        assert_eq!(next_cursor(r#"</x?cursor=p>; rel="prev", </x?cursor=n>; rel="next""#), Some("n".to_string()));
        assert_eq!(next_cursor(r#"</x?cursor=p>; rel="prev""#), None);
        assert_eq!(next_cursor(""), None);
    }

    #[test]
    fn segments() {
        assert_eq!(seg("a b/c"), "a%20b%2Fc");
        assert_eq!(seg("sbx_1-2.x~"), "sbx_1-2.x~");
    }
}
