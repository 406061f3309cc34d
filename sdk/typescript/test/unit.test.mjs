// Unit tests of the parts that need no server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BoxkiteError, ExecStream, TOOL_DEFINITIONS, runTool, toAnthropicTools, toOpenAITools } from "../dist/index.js";
import { errorFrom, nextCursor, parseRetryAfter, retryable } from "../dist/http.js";
import { tooOld, versionTuple } from "../dist/version.js";

test("versions: releases are compared, dev builds and pseudo-versions are not", () => {
  assert.deepEqual(versionTuple("v1.2.3"), [1, 2, 3]);
  assert.equal(versionTuple("dev"), undefined);
  assert.equal(versionTuple("v0.0.0-20250101000000-abcdef"), undefined);
  assert.equal(tooOld("0.0.1"), true);
  assert.equal(tooOld("0.1.0"), false);
  assert.equal(tooOld("dev"), false);
  assert.equal(tooOld(null), false);
});

test("Retry-After: seconds or an HTTP date", () => {
  assert.equal(parseRetryAfter("3"), 3000);
  assert.equal(parseRetryAfter(null), undefined);
  const ms = parseRetryAfter(new Date(Date.now() + 5000).toUTCString());
  assert.ok(ms > 3000 && ms <= 5000, String(ms));
});

test("retried: 429 rate_limited, the 503s the server gets over, either with Retry-After; never work performed", () => {
  const err = (status, code, details, retryAfter) => new BoxkiteError({ code, message: "m", status, details, retryAfter });
  for (const [e, want] of [
    [err(429, "rate_limited", undefined, 1), true],
    [err(429, "concurrent_sandbox_limit_reached"), false],
    [err(503, "host_capacity"), true],
    [err(503, "audit_unavailable", { performed: false }), true],
    [err(503, "audit_unavailable", { performed: true }), false],
    [err(503, "secrets_unavailable"), false],
    [err(503, "secrets_unavailable", undefined, 2), true],
    [err(409, "conflict", undefined, 1), false],
  ]) {
    assert.equal(retryable(e), want, `${e.status} ${e.code}`);
  }
});

test("errors print their code and hint", () => {
  const e = new BoxkiteError({ code: "not_found", message: "no sandbox x", hint: "list them", status: 404 });
  assert.equal(String(e), "BoxkiteError: no sandbox x [not_found]\nhint: list them");
  assert.equal(e.apiMessage, "no sandbox x");
  assert.deepEqual(e.toJSON().code, "not_found");
});

test("errors: an answer that is not boxkite's JSON is bad_response, without its body", async () => {
  const html = new Response("<html><body><h1>502 Bad Gateway</h1></body></html>", { status: 502, headers: { "Content-Type": "text/html; charset=utf-8" } });
  const e = await errorFrom(html, "http://proxy.example");
  assert.equal(e.code, "bad_response");
  assert.equal(e.status, 502);
  assert.equal(e.apiMessage, "the server at http://proxy.example answered 502 text/html, not boxkite's JSON");
  assert.match(e.hint, /any proxy in between/);
  assert.doesNotMatch(String(e), /<html>/);
  const down = await errorFrom(new Response("upstream down", { status: 503, headers: { "Content-Type": "text/plain", "Retry-After": "2" } }), "http://x");
  assert.equal(down.code, "bad_response");
  assert.ok(retryable(down), "a proxy's 503 is retried");
  const empty = await errorFrom(new Response(null, { status: 404 }), "http://x");
  assert.equal(empty.code, "not_found");
  const env = await errorFrom(new Response('{"error":{"code":"not_found","message":"no x"}}', { status: 404, headers: { "Content-Type": "application/json" } }), "http://x");
  assert.equal(env.code, "not_found");
});

test("ExecStream.signal: a stream without X-Exec-Id (an older server) is server_too_old, not a request", async () => {
  const stream = new ExecStream((async function* () {})());
  assert.equal(stream.execId, "");
  await assert.rejects(stream.signal(), (err) => {
    assert.ok(err instanceof BoxkiteError);
    assert.equal(err.code, "server_too_old");
    assert.match(err.hint, /upgrade/);
    return true;
  });
});

test("nextCursor: the cursor of the rel=next Link, none on the last page", () => {
  const h = (link) => new Headers(link ? { Link: link } : {});
  assert.equal(nextCursor(h('</v1/sandboxes?active_only=false&limit=2&cursor=a%2Bb_c>; rel="next"')), "a+b_c");
  assert.equal(nextCursor(h('</x?cursor=p>; rel="prev", </x?cursor=n>; rel="next"')), "n");
  assert.equal(nextCursor(h('</x?cursor=p>; rel="prev"')), undefined);
  assert.equal(nextCursor(h("")), undefined);
});

// The shapes OpenAI (Chat Completions, Responses) and Anthropic (Messages)
// document for function tools.
test("tool shapes", () => {
  const name = /^[a-zA-Z0-9_-]{1,64}$/;
  for (const t of toOpenAITools()) {
    assert.deepEqual(Object.keys(t).sort(), ["function", "type"]);
    assert.equal(t.type, "function");
    assert.deepEqual(Object.keys(t.function).sort(), ["description", "name", "parameters"]);
    assert.match(t.function.name, name);
    assert.equal(t.function.parameters.type, "object");
  }
  for (const t of toOpenAITools(undefined, "responses")) {
    assert.deepEqual(Object.keys(t).sort(), ["description", "name", "parameters", "strict", "type"]);
  }
  for (const t of toAnthropicTools()) {
    assert.deepEqual(Object.keys(t).sort(), ["description", "input_schema", "name"]);
    assert.equal(t.input_schema.type, "object");
  }
  assert.deepEqual(
    toAnthropicTools(["view"]).map((t) => t.name),
    ["view"],
  );
  assert.throws(() => toOpenAITools(["nope"]));
  assert.equal(TOOL_DEFINITIONS.length, toOpenAITools().length);
});

test("runTool: bash_tool says when the server cut the output", async () => {
  const fake = (res) => ({ exec: async () => res });
  const cut = { exit_code: 0, stdout: "1\n2\n", stderr: "", truncated: true, stdout_bytes: 9000, stderr_bytes: 0, output_limit_bytes: 4 };
  const note =
    "\n\n(output truncated: the command wrote 9000 bytes to stdout and 0 to stderr; only the first 4 bytes of each are shown. " +
    "Redirect the output to a file and read it with view or grep.)";
  assert.equal(await runTool(fake(cut), "bash_tool", { command: "seq 1 9999" }), "1\n2" + note);
  assert.equal(await runTool(fake({ ...cut, exit_code: 3 }), "bash_tool", { command: "x" }), "Error (exit code 3):\n1\n2" + note);
  assert.equal(await runTool(fake({ exit_code: 0, stdout: "ok\n", stderr: "", truncated: false }), "bash_tool", { command: "x" }), "ok");
});

test("runTool: bash_tool refuses a timeout out of range, as the API does", async () => {
  let ran = 0;
  const fake = { exec: async (_cmd, opts) => { ran = opts.timeout; return { exit_code: 0, stdout: "ok\n", stderr: "", truncated: false }; } };
  for (const t of [0, -3, 601, 9999, 5.5, "60"]) {
    assert.equal(
      await runTool(fake, "bash_tool", { command: "x", timeout: t }),
      `Error: timeout must be between 1 and 600 seconds, got ${JSON.stringify(t)}\nHint: omit timeout for the default of 120 seconds.`,
    );
  }
  assert.equal(ran, 0);
  assert.equal(await runTool(fake, "bash_tool", { command: "x", timeout: 600 }), "ok");
  assert.equal(ran, 600);
  assert.equal(await runTool(fake, "bash_tool", { command: "x" }), "ok");
  assert.equal(ran, 120);
});

test("runTool: an unknown or missing parameter is refused before the sandbox, as boxkite's MCP servers do", async () => {
  const ran = [];
  const fake = {
    exec: async (cmd) => { ran.push(cmd); return { exit_code: 0, stdout: "ok\n", stderr: "", truncated: false }; },
    files: { write: async (path, content) => { ran.push([path, content]); return { path: "/workspace/" + path, size: content.length }; } },
  };
  for (const [tool, args, want] of [
    // Anthropic's own editor tool calls the content file_text: not an empty file.
    ["file_create", { path: "a.txt", file_text: "x" }, 'Error: file_create has no parameter "file_text"; its parameters are content, path'],
    ["file_create", '{"path": "a.txt"}', 'Error: file_create needs the parameter "content"'],
    ["file_create", {}, 'Error: file_create needs the parameter "path", "content"'],
    ["bash_tool", { cmd: "ls", command: "ls" }, 'Error: bash_tool has no parameter "cmd"; its parameters are command, timeout'],
    ["bash_tool", { command: null }, 'Error: bash_tool needs the parameter "command"'],
    ["bash_tool", undefined, 'Error: bash_tool needs the parameter "command"'],
    ["bash_tool", '["ls"]', "Error: the arguments of bash_tool must be a JSON object"],
  ]) {
    assert.equal(await runTool(fake, tool, args), want, `${tool} ${JSON.stringify(args)}`);
  }
  assert.deepEqual(ran, []);
  assert.equal(await runTool(fake, "file_create", { path: "e.txt", content: "" }), "Created file: /workspace/e.txt (0 bytes)");
  assert.deepEqual(ran, [["e.txt", ""]]);
});

test("runTool: a hint names tools, not CLI commands the agent cannot run, as boxkite's Go tools do", async () => {
  for (const [code, hint, want] of [
    ["not_found", "list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)", ""],
    ["not_found", "read a file with 'boxkite files view PATH'", "read a file with `view`"],
    ["invalid_path", "name a file in it; list it with 'boxkite files ls DIR'; copy it whole with 'boxkite files cp -r ID:PATH DST'", "name a file in it"],
    ["not_found", "list your sandboxes with `boxkite session ls`", ""],
    ["validation_error", "name what to install in apt_packages ('boxkite images build --apt-package jq')", "name what to install in apt_packages"],
    ["host_capacity", "retry later, or raise the limit (boxkite doctor says how)", "retry later, or ask the server's operator to raise the limit"],
    ["bad_response", "check the server URL (see `boxkite config show`)", "check the server URL (see `boxkite config show`)"],
    ["validation_error", "omit size_gb for the default of 1 GB", "omit size_gb for the default of 1 GB"],
  ]) {
    const fake = { exec: async () => { throw new BoxkiteError({ code, message: "refused", hint, status: 404 }); } };
    assert.equal(await runTool(fake, "bash_tool", { command: "x" }), `Error [${code}]: refused` + (want ? `\nHint: ${want}` : ""), hint);
  }
});
