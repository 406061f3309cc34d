//! The error type: the API's envelope, or one the client makes itself.

use std::fmt;

/// Codes the client uses for errors the API did not send.
pub const CODE_CONNECTION: &str = "connection_error";
pub const CODE_TIMEOUT: &str = "timeout";
pub const CODE_SERVER_TOO_OLD: &str = "server_too_old";
pub const CODE_BAD_RESPONSE: &str = "bad_response";

/// The hint of a bad_response error: the answer was not boxkite's.
pub const BAD_RESPONSE_HINT: &str = "check the base URL (BOXKITE_BASE_URL / Client::new's url) and any proxy in between";

/// An error answer of the boxkite API (`{"error": {code, message, hint,
/// details, request_id}}`), or one the client makes itself (status 0).
/// `code` is stable: match on it, never on `message`. Display prints the
/// message, the code and, on a line of its own, the hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub code: String,
    pub message: String,
    pub hint: String,
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    pub details: serde_json::Value,
    pub request_id: String,
    /// Seconds the server asked to wait (Retry-After), when it did.
    pub retry_after: Option<f64>,
}

impl Error {
    /// An error the client makes itself.
    pub fn new(code: &str, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error {
            code: code.to_string(),
            message: message.into(),
            hint: hint.into(),
            status: 0,
            details: serde_json::Value::Null,
            request_id: String::new(),
            retry_after: None,
        }
    }

    /// The error of an answer that is not boxkite's: its status and
    /// content type, never its body (a proxy's page says nothing useful).
    pub(crate) fn bad_response(base_url: &str, status: u16, content_type: Option<&str>, request_id: Option<&str>, retry_after: Option<f64>) -> Self {
        let media = media_type(content_type);
        let shown = if media.is_empty() { "without a Content-Type" } else { media.as_str() };
        let mut e = Error::new(CODE_BAD_RESPONSE, format!("the server at {} answered {} {}, not boxkite's JSON", base_url, status, shown), BAD_RESPONSE_HINT);
        e.status = status;
        e.request_id = request_id.unwrap_or("").to_string();
        e.retry_after = retry_after;
        e
    }

    /// The error of a non-2xx answer, from its body and headers. A body
    /// that is neither the envelope nor JSON (a proxy's HTML page, another
    /// web server) is bad_response: the server at base_url is not boxkite.
    pub(crate) fn from_answer(base_url: &str, status: u16, content_type: Option<&str>, body: &str, request_id: Option<&str>, retry_after: Option<f64>) -> Self {
        let env = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("error").cloned())
            .filter(|v| v.is_object())
            .unwrap_or(serde_json::Value::Null);
        let media = media_type(content_type);
        if env.is_null() && !body.trim().is_empty() && media != "application/json" && !media.ends_with("+json") {
            return Error::bad_response(base_url, status, content_type, request_id, retry_after);
        }
        let s = |k: &str| env.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let mut message = s("message");
        if message.is_empty() {
            message = body.trim().chars().take(500).collect();
        }
        if message.is_empty() {
            message = format!("HTTP {}", status);
        }
        let mut code = s("code");
        if code.is_empty() {
            code = code_for_status(status).to_string();
        }
        let mut rid = s("request_id");
        if rid.is_empty() {
            rid = request_id.unwrap_or("").to_string();
        }
        Error {
            code,
            message,
            hint: s("hint"),
            status,
            details: env.get("details").cloned().unwrap_or(serde_json::Value::Null),
            request_id: rid,
            retry_after,
        }
    }
}

/// Web pages: what a proxy, a login page or a static site answers, never boxkite.
pub(crate) const HTML_TYPES: [&str; 2] = ["text/html", "application/xhtml+xml"];

/// A Content-Type without its parameters, lower case.
pub(crate) fn media_type(content_type: Option<&str>) -> String {
    content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// The code a status implies when the body carried no envelope.
pub(crate) fn code_for_status(status: u16) -> &'static str {
    match status {
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        422 => "validation_error",
        429 => "rate_limited",
        503 => "service_unavailable",
        s if s >= 500 => "internal_error",
        _ => "bad_request",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.code)?;
        if !self.hint.is_empty() {
            write!(f, "\nhint: {}", self.hint)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// The result of a call.
pub type Result<T> = std::result::Result<T, Error>;
