"""HTTP transport: one request at a time over http.client, with the error
envelope, retries on 429/503 honouring Retry-After, and the server version
check. Standard library only."""

from __future__ import annotations

import email.utils
import http.client
import json as jsonlib
import random
import re
import socket
import ssl
import time
import urllib.parse
import uuid
from typing import Any, BinaryIO, Callable, Dict, Iterator, Optional, Tuple, Union

from . import errors
from ._version import MIN_SERVER_VERSION, __version__

# The 503 codes retried: the server cannot take the request now but will.
# Others (secrets_unavailable: the server has no secrets key) would get the
# same answer again. bad_response: a proxy's 503 page, its backend away for now.
RETRY_503_CODES = frozenset(("service_unavailable", "host_capacity", "audit_unavailable", "sidecar_not_configured", "bad_response"))


def retryable(err: errors.BoxkiteError) -> bool:
    """Whether a refusal is worth sending again: a 429 rate_limited (not a
    fair-use limit such as concurrent_sandbox_limit_reached), a 503 of
    RETRY_503_CODES, or either with Retry-After; never an answer whose
    details say performed: true (done, only its audit entry is pending)."""
    if isinstance(err.details, dict) and err.details.get("performed") is True:
        return False
    if err.status == 429:
        return err.code == "rate_limited" or err.retry_after is not None
    if err.status == 503:
        return err.code in RETRY_503_CODES or err.retry_after is not None
    return False

Body = Union[None, bytes, BinaryIO]


def _status_code(status: int) -> str:
    """The code a status implies when the body carried no envelope."""
    return {
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        409: "conflict",
        422: "validation_error",
        429: "rate_limited",
        503: "service_unavailable",
    }.get(status, "internal_error" if status >= 500 else "bad_request")


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


BAD_RESPONSE_HINT = "check the base URL (BOXKITE_BASE_URL / base_url) and any proxy in between"


def _media_type(headers: Any) -> str:
    """The Content-Type without its parameters, lower case."""
    value = (headers.get("Content-Type") if headers else None) or ""
    return value.split(";", 1)[0].strip().lower()


# Web pages: what a proxy, a login page or a static site answers, never boxkite.
HTML_TYPES = frozenset(("text/html", "application/xhtml+xml"))

# The media types of the API's streams, for request(stream_types=).
NDJSON_TYPES = ("application/x-ndjson", "application/json")  # a streamed exec; a server that does not stream answers JSON
SSE_TYPES = ("text/event-stream",)
TEXT_TYPES = ("text/plain",)  # an image's build log


def bad_response(base_url: str, status: int, headers: Any) -> errors.BoxkiteError:
    """The error of an answer that is not boxkite's: its status and content
    type, never its body (a proxy's page says nothing useful)."""
    media = _media_type(headers)
    return errors.error_class(status)(
        code=errors.CODE_BAD_RESPONSE,
        message=f"the server at {base_url} answered {status} {media or 'without a Content-Type'}, not boxkite's JSON",
        hint=BAD_RESPONSE_HINT,
        status=status,
        request_id=(headers.get("X-Request-ID") if headers else "") or "",
        retry_after=parse_retry_after(headers.get("Retry-After")) if headers else None,
    )


def error_from(status: int, headers: Any, body: bytes, base_url: str = "") -> errors.BoxkiteError:
    """The BoxkiteError for a non-2xx answer. A body that is neither the
    envelope nor JSON (a proxy's HTML page, another web server) is
    bad_response: the server at base_url is not boxkite."""
    env: Dict[str, Any] = {}
    try:
        doc = jsonlib.loads(body.decode("utf-8")) if body else None
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            env = doc["error"]
    except (UnicodeDecodeError, ValueError):
        pass
    media = _media_type(headers)
    if not env and body.strip() and media != "application/json" and not media.endswith("+json"):
        return bad_response(base_url, status, headers)
    code = env.get("code") or _status_code(status)
    message = env.get("message") or (body.decode("utf-8", "replace").strip()[:500] if body else "") or f"HTTP {status}"
    cls = errors.error_class(status)
    return cls(
        code=code,
        message=message,
        hint=env.get("hint") or "",
        status=status,
        details=env.get("details"),
        request_id=env.get("request_id") or (headers.get("X-Request-ID") if headers else "") or "",
        retry_after=parse_retry_after(headers.get("Retry-After")) if headers else None,
    )


_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(.*)$")


def version_tuple(v: str) -> Optional[tuple]:
    """(major, minor, patch) of a release version, None for dev builds and
    Go pseudo-versions (v0.0.0-20250101…-abcdef), which are not checked."""
    m = _VERSION.match(v.strip())
    if not m:
        return None
    t = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if t == (0, 0, 0) and m.group(4):
        return None
    return t


def check_server_version(version: Optional[str]) -> None:
    """Raise ServerVersionError when version is a release older than
    MIN_SERVER_VERSION."""
    if not version:
        return
    have, want = version_tuple(version), version_tuple(MIN_SERVER_VERSION)
    if have is None or want is None or have >= want:
        return
    raise errors.ServerVersionError(
        code=errors.CODE_SERVER_TOO_OLD,
        message=f"boxkite-server {version} is older than {MIN_SERVER_VERSION}, the oldest this SDK ({__version__}) supports",
        hint=f"upgrade boxkite-server to {MIN_SERVER_VERSION} or later, or install an SDK release that matches the server",
    )


class Response:
    """A streamed 2xx answer: iterate lines or read bytes, then close."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self._conn = conn
        self.raw = resp
        self.status = resp.status
        self.headers = resp.headers

    def read(self, n: Optional[int] = None) -> bytes:
        """Up to n bytes, or with n None the rest of the body."""
        return self.raw.read(n)

    def iter_lines(self) -> Iterator[bytes]:
        """Lines without their end of line, until the body ends."""
        while True:
            line = self.raw.readline()
            if not line:
                return
            yield line.rstrip(b"\r\n")

    def close(self) -> None:
        try:
            self.raw.close()
        finally:
            self._conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Transport:
    """Sends requests to one boxkite control plane.

    timeout bounds each wait for the server (connect, and each read);
    max_retries is how often a 429 or 503 answer, or a refused connection,
    is retried, waiting Retry-After when the server sends it, else an
    exponential backoff; max_retry_wait caps one wait.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout: float = 120.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        user_agent: str = "",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        u = urllib.parse.urlsplit(base_url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise errors.BoxkiteError(
                code="bad_request",
                message=f"base URL {base_url!r} is not an http(s) URL",
                hint="pass base_url like http://127.0.0.1:8090 or set BOXKITE_BASE_URL",
            )
        self.base_url = base_url.rstrip("/")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.user_agent = user_agent or f"boxkite-python/{__version__}"
        self.server_version: Optional[str] = None
        self._sleep = sleep

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_wait)
        return min(0.5 * (2**attempt) * (0.5 + random.random()), self.max_retry_wait, 8.0)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        body: Body = None,
        query: Optional[Dict[str, Any]] = None,
        headers: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
        stream: bool = False,
        stream_types: Optional[Tuple[str, ...]] = None,
        idempotency_key: Optional[str] = None,
        auth: Optional[str] = None,
        want_headers: bool = False,
        raw: bool = False,
    ) -> Any:
        """Send a request; return the decoded JSON answer (None when empty),
        with raw=True the bytes of an answer that is not JSON (else that is
        a bad_response), with want_headers=True the pair (answer, headers),
        or with stream=True a Response to read and close; stream_types names
        the media types the stream comes as (a 2xx answer of another type,
        such as another server's "200 OK" text, is a bad_response)."""
        q = {k: ("true" if v is True else "false" if v is False else v) for k, v in (query or {}).items() if v is not None}
        url = self._prefix + path + ("?" + urllib.parse.urlencode(q) if q else "")
        hdrs = {"User-Agent": self.user_agent, "Accept": "application/json"}
        token = auth if auth is not None else self.api_key
        if token:
            hdrs["Authorization"] = "Bearer " + token
        if json is not None:
            body = jsonlib.dumps(json).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        if idempotency_key:
            hdrs["Idempotency-Key"] = idempotency_key
        hdrs.update(headers or {})
        start = body.tell() if body is not None and hasattr(body, "seek") and hasattr(body, "tell") else None
        if body is not None and not isinstance(body, (bytes, bytearray)) and "Content-Length" not in hdrs:
            hdrs["Transfer-Encoding"] = "chunked"
        replayable = body is None or isinstance(body, (bytes, bytearray)) or start is not None
        wait = timeout if timeout is not None else self.timeout
        attempt = 0
        while True:
            if attempt > 0 and start is not None:
                body.seek(start)  # type: ignore[union-attr]
            conn = self._connect(wait)
            try:
                conn.request(method, url, body=body, headers=hdrs, encode_chunked="Transfer-Encoding" in hdrs)
                resp = conn.getresponse()
            except ConnectionRefusedError as e:
                conn.close()
                if attempt < self.max_retries and replayable:
                    self._sleep(self._backoff(attempt, None))
                    attempt += 1
                    continue
                raise errors.ConnectionError(
                    code=errors.CODE_CONNECTION,
                    message=f"cannot reach the boxkite server at {self.base_url}: {e}",
                    hint="start it with `boxkite up`, or check BOXKITE_BASE_URL",
                ) from e
            except socket.timeout as e:
                conn.close()
                raise errors.TimeoutError(
                    code=errors.CODE_TIMEOUT,
                    message=f"{method} {path}: no answer within {wait:g} s",
                    hint="pass a larger timeout= to the call or the client",
                ) from e
            except OSError as e:
                conn.close()
                raise errors.ConnectionError(
                    code=errors.CODE_CONNECTION,
                    message=f"{method} {path}: {e}",
                    hint="check that the server at " + self.base_url + " is up and reachable",
                ) from e
            self.server_version = resp.headers.get("Boxkite-Version") or self.server_version
            if 200 <= resp.status < 300:
                try:
                    check_server_version(resp.headers.get("Boxkite-Version"))
                    media = _media_type(resp.headers)
                    if media in HTML_TYPES or (stream and stream_types and media not in stream_types):
                        # A web page (a static site at the base URL answers
                        # 200 to every path): no route of boxkite answers one.
                        raise bad_response(self.base_url, resp.status, resp.headers)
                except errors.BoxkiteError:
                    resp.close()
                    conn.close()
                    raise
                if stream:
                    return Response(conn, resp)
                try:
                    data = resp.read()
                finally:
                    conn.close()
                if not data:
                    return (None, resp.headers) if want_headers else None
                ctype = resp.headers.get("Content-Type", "")
                if "json" not in ctype:
                    if not raw:
                        # JSON was due (a server answering 200 "OK" to
                        # every path is not boxkite).
                        raise bad_response(self.base_url, resp.status, resp.headers)
                    return (data, resp.headers) if want_headers else data
                try:
                    value = jsonlib.loads(data.decode("utf-8"))
                    return (value, resp.headers) if want_headers else value
                except ValueError as e:
                    raise errors.BoxkiteError(
                        code=errors.CODE_BAD_RESPONSE,
                        message=f"{method} {path}: the answer is not JSON: {e}",
                        status=resp.status,
                    ) from e
            try:
                data = resp.read()
            except OSError:
                data = b""
            finally:
                conn.close()
            err = error_from(resp.status, resp.headers, data, self.base_url)
            check_server_version(resp.headers.get("Boxkite-Version"))
            if retryable(err) and attempt < self.max_retries and replayable:
                self._sleep(self._backoff(attempt, err.retry_after))
                attempt += 1
                continue
            raise err


_LINK = re.compile(r'<([^>]*)>\s*((?:;\s*[^;,]*)*)')


def next_cursor(headers: Any) -> Optional[str]:
    """The cursor query parameter of the rel="next" Link (RFC 8288) of a
    list's answer; None on the last page."""
    for value in (headers.get_all("Link") or []) if hasattr(headers, "get_all") else [headers.get("Link") or ""]:
        for target, params in _LINK.findall(value):
            for p in params.split(";"):
                name, _, val = p.strip().partition("=")
                if name.strip().lower() == "rel" and "next" in val.strip().strip('"').lower().split():
                    cursor = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query).get("cursor")
                    return cursor[0] if cursor else None
    return None


def new_idempotency_key() -> str:
    """A fresh Idempotency-Key: creates retried after a lost answer run once."""
    return str(uuid.uuid4())


def quote(segment: str) -> str:
    """One path segment, escaped.

    A name may be "." or ".." (a secret's may), which urllib leaves as is and
    a URL's path takes as "this" and "up": their dots are escaped, which the
    server decodes back.
    """
    s = str(segment)
    if s in (".", ".."):
        return "%2E" * len(s)
    return urllib.parse.quote(s, safe="")
