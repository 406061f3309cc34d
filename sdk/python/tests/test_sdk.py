"""Unit tests of the Python SDK: the parts that need no server, and the
tool shapes OpenAI and Anthropic document. Run: python3 -m unittest
discover -s tests (sdk/conformance's TestSDKOwnTests does, with a server
in BOXKITE_BASE_URL for the live tests)."""

import asyncio
import email.utils
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import boxkite  # noqa: E402
from boxkite import _http  # noqa: E402

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class VersionTest(unittest.TestCase):
    def test_tuples(self):
        self.assertEqual(_http.version_tuple("v1.2.3"), (1, 2, 3))
        self.assertIsNone(_http.version_tuple("dev"))
        self.assertIsNone(_http.version_tuple("v0.0.0-20250101000000-abcdef"))

    def test_too_old(self):
        with self.assertRaises(boxkite.ServerVersionError) as cm:
            _http.check_server_version("0.0.1")
        self.assertEqual(cm.exception.code, "server_too_old")
        self.assertIn("upgrade boxkite-server", cm.exception.hint)
        for ok in ("dev", "0.1.0", "v2.0.0", None, ""):
            _http.check_server_version(ok)


class ErrorTest(unittest.TestCase):
    def test_envelope(self):
        body = b'{"error": {"code": "not_found", "message": "no sandbox x", "hint": "list them", "request_id": "r1"}}'
        e = _http.error_from(404, {"Retry-After": None}, body)
        self.assertIsInstance(e, boxkite.NotFoundError)
        self.assertEqual((e.code, e.hint, e.status, e.request_id), ("not_found", "list them", 404, "r1"))
        self.assertEqual(str(e), "no sandbox x [not_found]\nhint: list them")

    def test_not_boxkite(self):
        e = _http.error_from(503, {"Retry-After": "7"}, b"upstream down", "http://proxy.example")
        self.assertIsInstance(e, boxkite.ServiceUnavailableError)
        self.assertEqual((e.code, e.status, e.retry_after), ("bad_response", 503, 7.0))
        self.assertEqual(e.message, "the server at http://proxy.example answered 503 without a Content-Type, not boxkite's JSON")
        self.assertTrue(_http.retryable(e))
        html = {"Content-Type": "text/html; charset=utf-8", "Retry-After": None}
        e = _http.error_from(404, html, b"<html><body>nope</body></html>", "http://x.example/prefix")
        self.assertIsInstance(e, boxkite.NotFoundError)
        self.assertEqual(e.message, "the server at http://x.example/prefix answered 404 text/html, not boxkite's JSON")
        self.assertIn("any proxy in between", e.hint)
        self.assertNotIn("<html>", str(e))

    def test_empty_answer(self):
        e = _http.error_from(503, {"Retry-After": None}, b"")
        self.assertIsInstance(e, boxkite.ServiceUnavailableError)
        self.assertEqual((e.code, e.message), ("service_unavailable", "HTTP 503"))

    def test_retry_after_date(self):
        when = email.utils.formatdate(time.time() + 5, usegmt=True)
        self.assertTrue(3 < _http.parse_retry_after(when) <= 5)


class LinkTest(unittest.TestCase):
    def test_next_cursor(self):
        import email.message

        h = email.message.Message()
        h["Link"] = '</v1/sandboxes?active_only=false&limit=2&cursor=a%2Bb_c>; rel="next"'
        self.assertEqual(_http.next_cursor(h), "a+b_c")
        h = email.message.Message()
        h["Link"] = '</x?cursor=p>; rel="prev", </x?cursor=n>; rel="next"'
        self.assertEqual(_http.next_cursor(h), "n")
        self.assertIsNone(_http.next_cursor(email.message.Message()))
        h = email.message.Message()
        h["Link"] = '</x?cursor=p>; rel="prev"'
        self.assertIsNone(_http.next_cursor(h))

    def test_page_is_a_list(self):
        page = boxkite.SandboxPage([1, 2])
        page.next_cursor = "c"
        self.assertEqual((list(page), page.next_cursor), ([1, 2], "c"))
        self.assertIsNone(boxkite.SandboxPage().next_cursor)


class SegmentTest(unittest.TestCase):
    def test_dot_names(self):
        # A secret may be named "." or ".."; a path keeping those dots is
        # cleaned by the server's router ("/v1/secrets/.." is "/v1/").
        self.assertEqual(_http.quote("."), "%2E")
        self.assertEqual(_http.quote(".."), "%2E%2E")
        self.assertEqual(_http.quote("..."), "...")
        self.assertEqual(_http.quote("a b/c"), "a%20b%2Fc")


class ToolShapeTest(unittest.TestCase):
    """The shapes the APIs document for function tools."""

    def test_openai_chat(self):
        tools = boxkite.to_openai_tools()
        self.assertEqual([t["function"]["name"] for t in tools], ["bash_tool", "file_create", "view", "str_replace"])
        for t in tools:
            self.assertEqual(set(t), {"type", "function"})
            self.assertEqual(t["type"], "function")
            self.assertEqual(set(t["function"]), {"name", "description", "parameters"})
            self.assertRegex(t["function"]["name"], NAME)
            self.assertEqual(t["function"]["parameters"]["type"], "object")

    def test_openai_responses(self):
        for t in boxkite.to_openai_tools(api="responses"):
            self.assertEqual(set(t), {"type", "name", "description", "parameters", "strict"})
            self.assertEqual(t["type"], "function")

    def test_anthropic(self):
        for t in boxkite.to_anthropic_tools():
            self.assertEqual(set(t), {"name", "description", "input_schema"})
            self.assertRegex(t["name"], NAME)
            self.assertEqual(t["input_schema"]["type"], "object")
            self.assertIn("required", t["input_schema"])

    def test_select(self):
        self.assertEqual([t["name"] for t in boxkite.to_anthropic_tools(["view"])], ["view"])
        with self.assertRaises(ValueError):
            boxkite.to_openai_tools(["nope"])


class RunToolTest(unittest.TestCase):
    def test_run_tool_says_when_output_was_cut(self):
        class Fake:
            def __init__(self, res):
                self.res = res

            def exec(self, command, timeout=None):
                return self.res

        cut = {"exit_code": 0, "stdout": "1\n2\n", "stderr": "", "truncated": True, "stdout_bytes": 9000, "stderr_bytes": 0, "output_limit_bytes": 4}
        note = (
            "\n\n(output truncated: the command wrote 9000 bytes to stdout and 0 to stderr; only the first 4 bytes of each are shown. "
            "Redirect the output to a file and read it with view or grep.)"
        )
        self.assertEqual(boxkite.run_tool(Fake(cut), "bash_tool", {"command": "seq 1 9999"}), "1\n2" + note)
        self.assertEqual(boxkite.run_tool(Fake(dict(cut, exit_code=3)), "bash_tool", {"command": "x"}), "Error (exit code 3):\n1\n2" + note)
        whole = {"exit_code": 0, "stdout": "ok\n", "stderr": "", "truncated": False}
        self.assertEqual(boxkite.run_tool(Fake(whole), "bash_tool", {"command": "x"}), "ok")

    def test_run_tool_checks_parameters(self):
        # As boxkite's Go tools and MCP servers: an unknown or missing
        # parameter is refused before anything reaches the sandbox, so
        # file_create's content written as file_text (Anthropic's own name
        # for it) is not an empty file.
        ran = []

        class Files:
            def write(self, path, content):
                ran.append((path, content))
                return {"path": "/workspace/" + path, "size": len(content)}

        class Fake:
            files = Files()

            def exec(self, command, timeout=None):
                ran.append(command)
                return {"exit_code": 0, "stdout": "ok\n", "stderr": "", "truncated": False}

        for tool, args, want in [
            ("file_create", {"path": "a.txt", "file_text": "x"}, 'Error: file_create has no parameter "file_text"; its parameters are content, path'),
            ("file_create", '{"path": "a.txt"}', 'Error: file_create needs the parameter "content"'),
            ("file_create", {}, 'Error: file_create needs the parameter "path", "content"'),
            ("bash_tool", {"cmd": "ls", "command": "ls"}, 'Error: bash_tool has no parameter "cmd"; its parameters are command, timeout'),
            ("bash_tool", {"command": None}, 'Error: bash_tool needs the parameter "command"'),
            ("bash_tool", None, 'Error: bash_tool needs the parameter "command"'),
            ("bash_tool", '["ls"]', "Error: the arguments of bash_tool must be a JSON object"),
        ]:
            with self.subTest(tool=tool, args=args):
                self.assertEqual(boxkite.run_tool(Fake(), tool, args), want)
        self.assertEqual(ran, [])
        self.assertEqual(boxkite.run_tool(Fake(), "file_create", {"path": "e.txt", "content": ""}), "Created file: /workspace/e.txt (0 bytes)")
        self.assertEqual(ran, [("e.txt", "")])

    def test_run_tool_hints_name_tools_not_commands(self):
        # As boxkite's Go tools: a hint's CLI command becomes the tool that
        # does the same when the agent has it (view), and a clause or an
        # aside naming one it cannot run is left out.
        cases = [
            ("not_found", "list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)", ""),
            ("not_found", "read a file with 'boxkite files view PATH'", "read a file with `view`"),
            ("invalid_path", "name a file in it; list it with 'boxkite files ls DIR'; copy it whole with 'boxkite files cp -r ID:PATH DST'", "name a file in it"),
            ("not_found", "list your sandboxes with `boxkite session ls`", ""),
            ("validation_error", "name what to install in apt_packages ('boxkite images build --apt-package jq')", "name what to install in apt_packages"),
            ("host_capacity", "retry later, or raise the limit (boxkite doctor says how)", "retry later, or ask the server's operator to raise the limit"),
            ("bad_response", "check the server URL (see `boxkite config show`)", "check the server URL (see `boxkite config show`)"),
            ("validation_error", "omit size_gb for the default of 1 GB", "omit size_gb for the default of 1 GB"),
        ]
        for code, hint, want in cases:

            class Fake:
                def exec(self, command, timeout=None, _code=code, _hint=hint):
                    raise boxkite.BoxkiteError(code=_code, message="refused", hint=_hint, status=404)

            with self.subTest(hint=hint):
                self.assertEqual(
                    boxkite.run_tool(Fake(), "bash_tool", {"command": "x"}),
                    f"Error [{code}]: refused" + (f"\nHint: {want}" if want else ""),
                )

    def test_run_tool_refuses_timeout_out_of_range(self):
        ran = []

        class Fake:
            def exec(self, command, timeout=None):
                ran.append(timeout)
                return {"exit_code": 0, "stdout": "ok\n", "stderr": "", "truncated": False}

        for t in (0, -3, 601, 9999, 5.5, "60", True):
            self.assertEqual(
                boxkite.run_tool(Fake(), "bash_tool", {"command": "x", "timeout": t}),
                f"Error: timeout must be between 1 and 600 seconds, got {t}\nHint: omit timeout for the default of 120 seconds.",
            )
        self.assertEqual(ran, [])
        self.assertEqual(boxkite.run_tool(Fake(), "bash_tool", {"command": "x", "timeout": 600}), "ok")
        self.assertEqual(boxkite.run_tool(Fake(), "bash_tool", {"command": "x", "timeout": 5.0}), "ok")
        self.assertEqual(boxkite.run_tool(Fake(), "bash_tool", {"command": "x"}), "ok")
        self.assertEqual(ran, [600, 5, 120])


class ExecStreamSignalTest(unittest.TestCase):
    def test_no_exec_id_is_server_too_old(self):
        # A server or sidecar older than X-Exec-Id names no exec: signal
        # says so instead of posting to a route that is not there.
        stream = boxkite.ExecStream(iter([]), "", None)
        with self.assertRaises(boxkite.BoxkiteError) as cm:
            stream.signal()
        self.assertEqual(cm.exception.code, "server_too_old")
        self.assertIn("upgrade", cm.exception.hint)


class RetryTest(unittest.TestCase):
    def test_retryable(self):
        def err(status, code, details=None, retry_after=None):
            return boxkite.BoxkiteError(code=code, message="m", status=status, details=details, retry_after=retry_after)

        for e, want in [
            (err(429, "rate_limited", retry_after=1.0), True),
            (err(429, "concurrent_sandbox_limit_reached"), False),
            (err(503, "host_capacity"), True),
            (err(503, "audit_unavailable", {"performed": False}), True),
            (err(503, "audit_unavailable", {"performed": True}), False),
            (err(503, "secrets_unavailable"), False),
            (err(503, "secrets_unavailable", retry_after=2.0), True),
            (err(409, "conflict", retry_after=1.0), False),
        ]:
            self.assertEqual(_http.retryable(e), want, (e.status, e.code, e.details, e.retry_after))

    def test_backoff_honours_retry_after(self):
        t = _http.Transport("http://127.0.0.1:1", "k", max_retry_wait=2)
        self.assertEqual(t._backoff(0, 1.5), 1.5)
        self.assertEqual(t._backoff(0, 30), 2)
        self.assertLessEqual(t._backoff(5, None), 2)

    def test_refused_connection(self):
        slept = []
        t = _http.Transport("http://127.0.0.1:1", "k", max_retries=2, sleep=slept.append)
        with self.assertRaises(boxkite.ConnectionError) as cm:
            t.request("GET", "/health")
        self.assertEqual(len(slept), 2)
        self.assertIn("boxkite up", cm.exception.hint)


@unittest.skipUnless(os.environ.get("BOXKITE_BASE_URL"), "needs a server (BOXKITE_BASE_URL)")
class LiveTest(unittest.TestCase):
    def test_async_client(self):
        async def main():
            bk = boxkite.AsyncBoxkite()
            sb = await bk.sandboxes.create(label="async")
            try:
                stream = await sb.exec_stream("echo one; echo two >&2")
                events = [ev async for ev in stream]
                self.assertEqual(events[-1]["type"], "exit")
                self.assertEqual((stream.stdout, stream.stderr), ("one\n", "two\n"))
                # Ctrl-C: the command's trap runs and its exit code ends the stream.
                stream = await sb.exec_stream("trap 'echo caught; exit 5' INT; echo ready; while :; do sleep 0.1; done")
                self.assertNotEqual(stream.exec_id, "")
                signaled = None
                async for ev in stream:
                    if signaled is None and ev["type"] == "stdout":
                        signaled = await stream.signal("SIGINT")
                self.assertEqual(signaled, {"exec_id": stream.exec_id, "signal": "SIGINT"})
                self.assertEqual((stream.stdout, stream.exit_code), ("ready\ncaught\n", 5))
                with self.assertRaises(boxkite.NotFoundError):
                    await stream.signal("SIGINT")
                res = await sb.exec("echo hi")
                self.assertEqual(res["stdout"], "hi\n")
                await sb.files.upload("x.bin", b"\x00\x01")
                self.assertEqual(await sb.files.download("x.bin"), b"\x00\x01")
                entries = []
                async for e in sb.log.follow():
                    entries.append(e)
                    if e["operation"] == "file_download":
                        break
                self.assertIn("exec", [e["operation"] for e in entries])
                with self.assertRaises(boxkite.NotFoundError):
                    await bk.sandboxes.get("sbx_missing")
            finally:
                await sb.delete()

        asyncio.run(main())

    def test_run_tool_reports_refusals_as_text(self):
        bk = boxkite.Boxkite()
        text = boxkite.run_tool(bk.sandbox("sbx_missing"), "bash_tool", '{"command": "true"}')
        self.assertTrue(text.startswith("Error [not_found]: "), text)
        # The API's hint names `boxkite session ls`, a command the agent
        # cannot run and no tool of these does: it is left out.
        self.assertNotIn("boxkite ", text)


if __name__ == "__main__":
    unittest.main()
