"""The :class:`Sandbox` handle: exec, files, processes, audit log."""

from __future__ import annotations

import base64
import json
import time
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Union

from . import errors
from ._http import NDJSON_TYPES, SSE_TYPES, Transport, new_idempotency_key, quote
from ._streams import ndjson, raise_event_error, sse

# execMargin: an exec call waits for the command's own timeout plus this
# before it gives up on the server, so nothing here cuts a command short.
EXEC_MARGIN = 30.0
BROWSER_MARGIN = 90.0  # Chromium's start, and the server's own margin
DEFAULT_EXEC_TIMEOUT = 30

# How often in a row a live stream is reopened when it breaks without
# delivering anything, and the pause before each attempt.
STREAM_RETRIES = 5
STREAM_PAUSE = 0.5


def _body(fields: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class ExecStream:
    """The events of a streamed exec, as dicts: ``{"type": "stdout"|"stderr",
    "data"}`` while the command runs, then ``{"type": "exit", "exit_code",
    "duration_ms", …}``. An ``error`` event (the sandbox was lost mid-exec)
    is raised as a BoxkiteError. After the loop, ``result`` holds the exit
    event and ``stdout``/``stderr`` the collected output.

    While it runs, ``signal("SIGINT")`` is Ctrl-C: the command's process
    group gets the signal, and the stream ends as the command does.
    ``exec_id`` is the id the answer's X-Exec-Id header named ("" from a
    server or sidecar older than it)."""

    def __init__(self, events: Iterator[dict], exec_id: str = "", sandbox: Optional["Sandbox"] = None) -> None:
        self._events = events
        self.exec_id = exec_id
        self._sandbox = sandbox
        self.result: Optional[dict] = None
        self._out: List[str] = []
        self._err: List[str] = []

    def __iter__(self) -> Iterator[dict]:
        for ev in self._events:
            t = ev.get("type")
            if t == "error":
                raise_event_error(ev)
            if t == "stdout":
                self._out.append(ev.get("data", ""))
            elif t == "stderr":
                self._err.append(ev.get("data", ""))
            elif t == "exit":
                self.result = ev
            yield ev

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    @property
    def exit_code(self) -> Optional[int]:
        return None if self.result is None else self.result.get("exit_code", 0)

    def wait(self) -> dict:
        """Drain the stream; return the exit event with stdout and stderr."""
        for _ in self:
            pass
        return dict(self.result or {}, stdout=self.stdout, stderr=self.stderr)

    def signal(self, signal: str = "SIGINT") -> dict:
        """Send signal (SIGINT, SIGTERM, SIGHUP or SIGKILL) to the command's
        process group while it runs; how the command takes it shows in the
        exit event. A command that ended is a not_found BoxkiteError; a
        server too old to name its streamed execs is server_too_old."""
        if self._sandbox is None or not self.exec_id:
            raise errors.BoxkiteError(
                code=errors.CODE_SERVER_TOO_OLD,
                message="this exec stream has no id to signal it by (no X-Exec-Id header)",
                hint="upgrade the boxkite server (and recreate the sandbox, for its sidecar) to signal a streamed exec",
            )
        return self._sandbox.signal_exec(self.exec_id, signal)


class Files:
    """Files of one sandbox. Relative paths are under /workspace."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def write(self, path: str, content: str, description: Optional[str] = None) -> dict:
        """Write a text file, on disk before the answer."""
        return self._sb._post("/files", {"path": path, "content": content, "description": description})

    def view(self, path: str, view_range: Optional[List[int]] = None) -> dict:
        """A file with line numbers, or a directory's entries."""
        return self._sb._post("/files/view", {"path": path, "view_range": view_range})

    def str_replace(self, path: str, old_str: str, new_str: str, replace_all: Optional[bool] = None) -> dict:
        return self._sb._post("/files/str-replace", {"path": path, "old_str": old_str, "new_str": new_str, "replace_all": replace_all})

    def ls(self, path: Optional[str] = None) -> List[dict]:
        """A directory's entries (default: the workspace). A file is refused
        (``not_a_directory``), a missing path is ``not_found``."""
        return (self._sb._post("/files/ls", {"path": path}) or {}).get("entries") or []

    def glob(self, pattern: str, path: Optional[str] = None) -> dict:
        return self._sb._post("/files/glob", {"pattern": pattern, "path": path})

    def grep(self, pattern: str, path: Optional[str] = None, glob: Optional[str] = None, max_matches: Optional[int] = None) -> dict:
        return self._sb._post("/files/grep", {"pattern": pattern, "path": path, "glob": glob, "max_matches": max_matches})

    def watch(self, path: Optional[str] = None, timeout_seconds: Optional[float] = None, recursive: Optional[bool] = None) -> dict:
        """Wait for changes under path (at most timeout_seconds)."""
        wait = (timeout_seconds or 30) + EXEC_MARGIN
        return self._sb._post("/files/watch", {"path": path, "timeout_seconds": timeout_seconds, "recursive": recursive}, timeout=wait)

    def present(self, filepaths: List[str]) -> dict:
        """Mark files as outputs for the user."""
        return self._sb._post("/files/present", {"filepaths": filepaths})

    def upload(self, path: str, data: Union[bytes, str, BinaryIO]) -> dict:
        """Write bytes (or a binary file object, streamed) to path."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        return self._sb._t.request(
            "PUT", self._sb._path("/files/raw"), body=data, query={"path": path}, headers={"Content-Type": "application/octet-stream"}
        )

    def download(self, path: str) -> bytes:
        """A file's bytes."""
        with self.open(path) as resp:
            return resp.read()

    def download_to(self, path: str, out: BinaryIO, chunk: int = 1 << 16) -> int:
        """Stream a file into out; return the byte count."""
        n = 0
        with self.open(path) as resp:
            while True:
                b = resp.read(chunk)
                if not b:
                    return n
                out.write(b)
                n += len(b)

    def open(self, path: str):
        """The streamed answer of GET files/raw, to read and close."""
        return self._sb._t.request("GET", self._sb._path("/files/raw"), query={"path": path}, stream=True)

    def upload_archive(self, directory: str, archive: Union[bytes, BinaryIO]) -> dict:
        """Extract a tar or tar.gz under directory."""
        return self._sb._t.request(
            "POST", self._sb._path("/files/archive"), body=archive, query={"path": directory}, headers={"Content-Type": "application/gzip"}
        )

    def download_archive(self, directory: str, gzip: bool = False) -> bytes:
        """directory as a tar (gzip=True: tar.gz), names relative to it."""
        query = {"path": directory, "gzip": "1" if gzip else None}
        with self._sb._t.request("GET", self._sb._path("/files/archive"), query=query, stream=True) as resp:
            return resp.read()


class Processes:
    """Background processes of one sandbox."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def start(
        self, command: str, description: Optional[str] = None, max_runtime_seconds: Optional[int] = None, restart: Optional[bool] = None
    ) -> dict:
        """Start a background process; restart=True starts it again when the
        sandbox resumes from a filesystem pause, which ends every process."""
        body = {"command": command, "description": description, "max_runtime_seconds": max_runtime_seconds, "restart": restart}
        return self._sb._post("/processes", body)

    def list(self) -> List[dict]:
        return (self._sb._t.request("GET", self._sb._path("/processes")) or {}).get("processes") or []

    def output(self, pid: str, since_offset: Optional[int] = None) -> dict:
        return self._sb._t.request("GET", self._sb._path(f"/processes/{quote(pid)}/output"), query={"since_offset": since_offset})

    def stream(self, pid: str, since_offset: Optional[int] = None) -> Iterator[dict]:
        """The process's output events, then its exit event; a broken
        stream is resumed from the last offset seen. An error event ends
        it, raised as a BoxkiteError (sandbox_operation_failed: the
        stream was cut)."""
        offset = since_offset
        failures = 0
        while True:
            resp = self._sb._t.request(
                "GET",
                self._sb._path(f"/processes/{quote(pid)}/stream"),
                query={"since_offset": offset},
                headers={"Accept": "text/event-stream"},
                stream=True,
                stream_types=SSE_TYPES,
            )
            try:
                for _, data in sse(resp):
                    ev = json.loads(data)
                    if ev.get("type") == "error":
                        # The stream was cut (a scrubbed stream's event over
                        # the cap it holds): raised, never resumed.
                        raise_event_error(ev)
                    failures = 0
                    if ev.get("type") == "output" and ev.get("next_offset") is not None:
                        offset = ev["next_offset"]
                    yield ev
                    if ev.get("type") == "exit":
                        return
            except OSError:
                pass
            failures += 1
            if failures > STREAM_RETRIES:
                raise errors.ConnectionError(code=errors.CODE_CONNECTION, message=f"process {pid}: the output stream keeps breaking")
            time.sleep(STREAM_PAUSE * failures)

    def input(self, pid: str, data: str) -> dict:
        return self._sb._post(f"/processes/{quote(pid)}/input", {"data": data})

    def stop(self, pid: str) -> dict:
        return self._sb._post(f"/processes/{quote(pid)}/stop", None)

    def kill_all(self) -> dict:
        return self._sb._post("/processes/kill-all", None)


class Interpreter:
    """The sandbox's persistent Python interpreter (sb.interpreter), or its
    Node.js one (sb.node_interpreter: JavaScript, result is util.inspect of
    the last value, a promise awaited)."""

    def __init__(self, sb: "Sandbox", prefix: str = "/interpreter") -> None:
        self._sb = sb
        self._prefix = prefix

    def exec(self, code: str, timeout: Optional[int] = None) -> dict:
        """Run code; return ``stdout``, ``result``, ``error`` (null on
        success) and ``truncated``."""
        wait = (timeout or DEFAULT_EXEC_TIMEOUT) + EXEC_MARGIN
        return self._sb._post(self._prefix + "/exec", {"code": code, "timeout": timeout}, timeout=wait)

    def reset(self) -> dict:
        return self._sb._post(self._prefix + "/reset", None)

    def status(self) -> dict:
        return self._sb._t.request("GET", self._sb._path(self._prefix + "/status"))


class Browser:
    """The sandbox's headless Chromium (the browser tools; the image must
    have chromium). Page failures come back in ``error`` with a 200; only a
    bad request raises."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def navigate(self, url: str, wait_until: Optional[str] = None, timeout_seconds: Optional[int] = None) -> dict:
        """Open url; return ``title``, ``url``, ``status`` and ``error``."""
        body = {"url": url, "wait_until": wait_until, "timeout_seconds": timeout_seconds}
        return self._sb._post("/browser/navigate", body, timeout=(timeout_seconds or 30) + BROWSER_MARGIN)

    def exec(self, script: str, timeout_seconds: Optional[int] = None) -> dict:
        """Run JavaScript in the page; return its value as ``result`` and ``error``."""
        body = {"script": script, "timeout_seconds": timeout_seconds}
        return self._sb._post("/browser/exec", body, timeout=(timeout_seconds or 10) + BROWSER_MARGIN)

    def screenshot(self, full_page: bool = False) -> dict:
        """A PNG of the page, base64, as ``image_base64`` (and ``error``)."""
        return self._sb._post("/browser/screenshot", {"full_page": full_page or None}, timeout=120 + BROWSER_MARGIN)

    def close(self) -> dict:
        """Stop Chromium: ``status`` is closed or not_running."""
        return self._sb._post("/browser/close", None)


class Previews:
    """Preview URLs of ports inside the sandbox."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def create(self, port: int, ttl_seconds: Optional[int] = None) -> dict:
        """A preview URL of port, valid ttl_seconds (30..86400, default
        3600): ``url`` (host-based), ``path_url`` and ``token``, shown once."""
        return self._sb._post(f"/preview/{int(port)}", {"ttl_seconds": ttl_seconds})

    def list(self) -> List[dict]:
        """The live previews, without tokens."""
        return self._sb._t.request("GET", self._sb._path("/previews")) or []

    def revoke(self, port: int) -> None:
        """Revoke every live preview of port: their URLs answer 401 at once."""
        self._sb._t.request("DELETE", self._sb._path(f"/preview/{int(port)}"))


class LSP:
    """Language servers in the sandbox."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def start(self, language: str) -> dict:
        return self._sb._post("/lsp/start", {"language": language})

    def open(self, lsp_id: str, path: str, content: str) -> dict:
        return self._sb._post(f"/lsp/{quote(lsp_id)}/open", {"path": path, "content": content})

    def completion(self, lsp_id: str, path: str, line: int, character: int) -> dict:
        return self._sb._post(f"/lsp/{quote(lsp_id)}/completion", {"path": path, "line": line, "character": character})

    def stop(self, lsp_id: str) -> dict:
        return self._sb._post(f"/lsp/{quote(lsp_id)}/stop", None)


class Log:
    """The sandbox's hash-chained audit log."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def page(self, limit: Optional[int] = None, offset: Optional[int] = None) -> dict:
        """One page: ``entries`` oldest first, ``total``, ``limit``, ``offset``."""
        return self._sb._t.request("GET", self._sb._path("/log"), query={"limit": limit, "offset": offset})

    def entries(self, page_size: int = 500) -> Iterator[dict]:
        """Every entry, oldest first, fetching page by page."""
        offset = 0
        while True:
            page = self.page(limit=page_size, offset=offset)
            items = page.get("entries") or []
            yield from items
            offset += len(items)
            if not items or offset >= page.get("total", 0):
                return

    def follow(self, last_event_id: Optional[str] = None) -> Iterator[dict]:
        """Entries as they are written (GET watch, server-sent events): the
        newest 100 first, or those after last_event_id. A broken stream is
        reopened with Last-Event-ID, so no entry is missed or repeated. Runs
        until the caller stops iterating."""
        failures = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last_event_id:
                headers["Last-Event-ID"] = last_event_id
            try:
                resp = self._sb._t.request("GET", self._sb._path("/watch"), headers=headers, stream=True, stream_types=SSE_TYPES)
                for ev_id, data in sse(resp):
                    entry = json.loads(data)
                    if ev_id:
                        last_event_id = ev_id
                    failures = 0
                    yield entry
            except (OSError, errors.ConnectionError, errors.TimeoutError):
                pass
            failures += 1
            if failures > STREAM_RETRIES:
                raise errors.ConnectionError(
                    code=errors.CODE_CONNECTION,
                    message=f"sandbox {self._sb.id}: the watch stream keeps breaking",
                    hint="check the server; follow(last_event_id=…) resumes where this stopped",
                )
            time.sleep(STREAM_PAUSE * failures)


class Storage:
    """The sandbox's workspace synced to the server's object storage (S3,
    Azure Blob or GCS, when the operator configured one; otherwise every
    call is 503 storage_unavailable). The files stay listable and
    downloadable after the sandbox is destroyed."""

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def status(self) -> dict:
        """The sync's state: ``state`` (syncing, final, deleted), ``pending``,
        ``last_flush_at``, ``last_error``, ``next_attempt_at``, …"""
        return self._sb._t.request("GET", self._sb._path("/sync"))

    def flush(self) -> dict:
        """Flush the workspace now, without waiting for files to settle;
        returns the state after it (502 storage_failed when the store refuses)."""
        return self._sb._t.request("POST", self._sb._path("/sync/flush"))

    def files(self) -> List[dict]:
        """The stored files: ``path`` (relative to /workspace), ``size``, ``modified_at``."""
        return (self._sb._t.request("GET", self._sb._path("/storage/files")) or {}).get("files") or []

    def download(self, path: str) -> bytes:
        """A stored file's bytes (path relative to /workspace)."""
        with self.open(path) as resp:
            return resp.read()

    def open(self, path: str):
        """The streamed answer of GET storage/files/raw, to read and close."""
        return self._sb._t.request("GET", self._sb._path("/storage/files/raw"), query={"path": path}, stream=True)

    def delete(self) -> None:
        """Delete the stored files (a running sandbox is synced again from scratch)."""
        self._sb._t.request("DELETE", self._sb._path("/storage"))


class Sandbox:
    """One sandbox. ``id`` names it; ``data`` is its record as last fetched
    (``status``, ``label``, ``expires_at``, …), also readable as sb["status"]."""

    def __init__(self, transport: Transport, data: dict) -> None:
        self._t = transport
        self.data = data
        self.id: str = data["id"]
        self.files = Files(self)
        self.processes = Processes(self)
        self.interpreter = Interpreter(self)
        self.node_interpreter = Interpreter(self, "/node-interpreter")
        self.browser = Browser(self)
        self.previews = Previews(self)
        self.lsp = LSP(self)
        self.log = Log(self)
        self.storage = Storage(self)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, status={self.data.get('status')!r})"

    def _path(self, sub: str) -> str:
        return f"/v1/sandboxes/{quote(self.id)}{sub}"

    def _post(self, sub: str, body: Optional[Dict[str, Any]], timeout: Optional[float] = None) -> Any:
        return self._t.request("POST", self._path(sub), json=_body(body) if body is not None else {}, timeout=timeout)

    def refresh(self) -> "Sandbox":
        self.data = self._t.request("GET", self._path(""))
        return self

    def delete(self) -> None:
        self._t.request("DELETE", self._path(""))

    def extend(self, lifetime_minutes: int) -> "Sandbox":
        self.data = self._t.request("POST", self._path("/extend"), json={"lifetime_minutes": lifetime_minutes})
        return self

    def pause(self, mode: Optional[str] = None) -> "Sandbox":
        """Pause the sandbox (mode "freeze", the default, "filesystem" or
        "checkpoint"); its lifetime stops counting until resume()."""
        self.data = self._t.request("POST", self._path("/pause"), json=_body({"mode": mode}))
        return self

    def resume(self) -> "Sandbox":
        """Resume a paused sandbox: same id and endpoints."""
        self.data = self._t.request("POST", self._path("/resume"))
        return self

    def snapshot(self, label: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> dict:
        """Snapshot the sandbox's filesystem, crash-consistent; Boxkite.snapshots
        lists, restores and deletes snapshots. At most 10 per account by
        default (429 snapshot_limit_reached)."""
        return self._t.request(
            "POST", self._path("/snapshots"), json=_body({"label": label}), idempotency_key=idempotency_key or new_idempotency_key()
        )

    def snapshots(self) -> List[dict]:
        """The sandbox's snapshots, newest first."""
        return self._t.request("GET", self._path("/snapshots")) or []

    def fork(self, count: int = 1, *, idempotency_key: Optional[str] = None) -> List["Sandbox"]:
        """Fork the sandbox count ways: each child starts from its files as
        they are now, its writes seen by no other."""
        data = self._t.request(
            "POST", self._path("/fork"), json={"count": count}, idempotency_key=idempotency_key or new_idempotency_key()
        )
        return [Sandbox(self._t, d) for d in data or []]

    def stats(self) -> dict:
        return self._t.request("GET", self._path("/stats"))

    def takeover_token(self, read_only: bool = False) -> dict:
        """A single-use token for the sandbox's terminal (admin keys)."""
        return self._post("/takeover-token", {"read_only": read_only or None})

    def http_request(
        self,
        url: str,
        method: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        body: Optional[str] = None,
        timeout: Optional[int] = None,
    ) -> dict:
        """The control plane makes an HTTP request for the sandbox, each
        {{secret:NAME}} in url, headers or body replaced by that secret's
        value, only to the secret's allowed hosts; echoes of a value in the
        answer are redacted. Returns status_code, headers, body,
        truncated and secrets_used."""
        req = _body({"url": url, "method": method, "headers": headers, "body": body, "timeout": timeout})
        return self._t.request("POST", self._path("/http-request"), json=req, timeout=(timeout or 15) + EXEC_MARGIN)

    def pty_exec(self, command: str, input_bytes: Optional[bytes] = None, timeout_seconds: Optional[float] = None) -> dict:
        """Run one command (split into words, no shell) on a terminal of its
        own, typing input_bytes into it; return ``output``, ``exit_code``
        (None when it timed out) and ``timed_out``."""
        body = _body({
            "command": command,
            "input_bytes": base64.b64encode(input_bytes).decode() if input_bytes else None,
            "timeout_seconds": timeout_seconds,
        })
        return self._t.request("POST", self._path("/pty-exec"), json=body, timeout=min(timeout_seconds or 30, 120) + EXEC_MARGIN)

    def takeover_recording(self, recording_id: str) -> bytes:
        """A takeover's asciicast v2 recording (servers started with takeover
        recording on); a takeover_end audit entry's detail names it. Works
        after the sandbox is gone."""
        with self._t.request("GET", self._path(f"/takeover-recordings/{quote(recording_id)}"), stream=True) as resp:
            return resp.read()

    def _exec_body(self, command: str, **kw: Any) -> Dict[str, Any]:
        return _body(dict(kw, command=command))

    def exec(
        self,
        command: str,
        timeout: Optional[int] = None,
        stdin: Optional[str] = None,
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        description: Optional[str] = None,
        max_output_bytes: Optional[int] = None,
        on_output_limit: Optional[str] = None,
        secret_env: Optional[Dict[str, str]] = None,
    ) -> dict:
        """Run a shell command; return ``exit_code``, ``stdout``, ``stderr``,
        ``duration_ms`` (and the truncation fields when output was cut).
        secret_env maps environment variables to secret names: their values
        in this command's environment only (docs/secrets.md, servers started
        with --allow-secret-env), echoes redacted from the result."""
        body = self._exec_body(
            command, timeout=timeout, stdin=stdin, cwd=cwd, env=env, description=description,
            max_output_bytes=max_output_bytes, on_output_limit=on_output_limit, secret_env=secret_env,
        )
        return self._t.request("POST", self._path("/exec"), json=body, timeout=(timeout or DEFAULT_EXEC_TIMEOUT) + EXEC_MARGIN)

    def exec_stream(
        self,
        command: str,
        timeout: Optional[int] = None,
        stdin: Optional[str] = None,
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        description: Optional[str] = None,
        max_output_bytes: Optional[int] = None,
        on_output_limit: Optional[str] = None,
    ) -> ExecStream:
        """Run a shell command and stream its output as it happens."""
        body = self._exec_body(
            command, timeout=timeout, stdin=stdin, cwd=cwd, env=env, description=description,
            max_output_bytes=max_output_bytes, on_output_limit=on_output_limit,
        )
        resp = self._t.request(
            "POST", self._path("/exec"), json=body, headers={"Accept": "application/x-ndjson"},
            stream=True, stream_types=NDJSON_TYPES, timeout=(timeout or DEFAULT_EXEC_TIMEOUT) + EXEC_MARGIN,
        )
        return ExecStream(ndjson(resp), resp.headers.get("X-Exec-Id") or "", self)

    def signal_exec(self, exec_id: str, signal: str = "SIGINT") -> dict:
        """Send signal (SIGINT, SIGTERM, SIGHUP or SIGKILL) to the process
        group of the streamed exec exec_id (ExecStream.exec_id) while it
        runs; ExecStream.signal is the same. A command that ended is a
        not_found BoxkiteError."""
        return self._post(f"/exec/{quote(exec_id)}/signal", {"signal": signal})
