"""Runs sdk/conformance/cases.json with the Python SDK and prints one JSON
line per case: {"name", "result" | "error", "elapsed_ms"}. The Go test in
sdk/conformance starts the servers, runs this and compares.

Usage: python3 conformance_runner.py CASES.json (servers from
BOXKITE_BASE_URL, BOXKITE_API_KEY, BOXKITE_CONFORMANCE_OLD_URL,
BOXKITE_CONFORMANCE_FLAKY_URL, BOXKITE_CONFORMANCE_HTML_URL).
"""

import base64
import hashlib
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import boxkite  # noqa: E402

REF = re.compile(r"^\$\{([^}]+)\}$")


def resolve(value, saved):
    if isinstance(value, str):
        m = REF.match(value)
        if not m:
            return value
        cur = saved
        for part in m.group(1).split("."):
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        return cur
    if isinstance(value, list):
        return [resolve(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, saved) for k, v in value.items()}
    return value


def content(a):
    if "content_b64" in a:
        return base64.b64decode(a["content_b64"])
    rep = a["repeat"].encode()
    return (rep * (a["size"] // len(rep) + 1))[: a["size"]]


def follow(sb, a):
    out = []
    for entry in sb.log.follow(last_event_id=a.get("last_event_id")):
        out.append(entry)
        if len(out) == a["count"]:
            break
    return {"entries": out}


def exec_signal(sb, a):
    # Ctrl-C: signal once the command printed, read the stream to its end.
    stream = sb.exec_stream(a["command"])
    events, signaled = [], None
    for ev in stream:
        events.append(ev)
        if not a.get("after_exit") and signaled is None and ev.get("type") == "stdout":
            signaled = stream.signal(a["signal"])
    if a.get("after_exit"):
        signaled = stream.signal(a["signal"])
    return {"exec_id": stream.exec_id, "signaled": signaled, "events": events}


def calls(bk):
    sb = lambda a: bk.sandbox(a["id"])  # noqa: E731
    return {
        "health": lambda a: bk.health(),
        "ready": lambda a: bk.ready(),
        "secrets.create": lambda a: bk.secrets.create(a["name"], a["value"], a["allowed_hosts"]),
        "secrets.list": lambda a: bk.secrets.list(),
        "secrets.update": lambda a: bk.secrets.update(a["id"], a["value"], a.get("allowed_hosts")),
        "secrets.delete": lambda a: bk.secrets.delete(a["id"]),
        "sandbox.http_request": lambda a: sb(a).http_request(a["url"], method=a.get("method"), headers=a.get("headers"), body=a.get("body")),
        "account.update": lambda a: bk.account.update(scrub_output=a["scrub_output"]),
        "account.host": lambda a: bk.account.host(),
        "account.me": lambda a: boxkite.Boxkite(bk.base_url, a["token"]).account.me(),
        "auth.signup": lambda a: bk.signup(a["email"], a["password"]),
        "auth.login": lambda a: bk.login(a["email"], a["password"]),
        "ssh_keys.create": lambda a: bk.ssh_keys.create(a["public_key"], name=a.get("name")),
        "ssh_keys.list": lambda a: bk.ssh_keys.list(),
        "ssh_keys.delete": lambda a: bk.ssh_keys.delete(a["id"]),
        "bastion.takeover_token": lambda a: bk.bastion_takeover_token(a["sandbox_id"], public_key=a.get("public_key")),
        "sandbox.takeover_token": lambda a: sb(a).takeover_token(),
        "sandbox.takeover_recording": lambda a: {"size": len(sb(a).takeover_recording(a["recording_id"]))},
        "files.watch": lambda a: sb(a).files.watch(a.get("path"), timeout_seconds=a.get("timeout_seconds")),
        "files.present": lambda a: sb(a).files.present(a["filepaths"]),
        "processes.input": lambda a: sb(a).processes.input(a["pid"], a["data"]),
        "processes.stop": lambda a: sb(a).processes.stop(a["pid"]),
        "processes.kill_all": lambda a: sb(a).processes.kill_all(),
        "interpreter.status": lambda a: sb(a).interpreter.status(),
        "interpreter.reset": lambda a: sb(a).interpreter.reset(),
        "node_interpreter.exec": lambda a: sb(a).node_interpreter.exec(a["code"]),
        "node_interpreter.status": lambda a: sb(a).node_interpreter.status(),
        "node_interpreter.reset": lambda a: sb(a).node_interpreter.reset(),
        "sandbox.pty_exec": lambda a: sb(a).pty_exec(a["command"], input_bytes=base64.b64decode(a.get("input_bytes") or "")),
        "previews.create": lambda a: sb(a).previews.create(a["port"], ttl_seconds=a.get("ttl_seconds")),
        "previews.list": lambda a: sb(a).previews.list(),
        "previews.revoke": lambda a: sb(a).previews.revoke(a["port"]),
        "browser.navigate": lambda a: sb(a).browser.navigate(a["url"]),
        "browser.exec": lambda a: sb(a).browser.exec(a["script"]),
        "browser.screenshot": lambda a: sb(a).browser.screenshot(),
        "browser.close": lambda a: sb(a).browser.close(),
        "lsp.start": lambda a: sb(a).lsp.start(a["language"]),
        "lsp.open": lambda a: sb(a).lsp.open(a["lsp_id"], a["path"], a["content"]),
        "lsp.completion": lambda a: sb(a).lsp.completion(a["lsp_id"], a["path"], a["line"], a["character"]),
        "lsp.stop": lambda a: sb(a).lsp.stop(a["lsp_id"]),
        "images.create": lambda a: bk.images.create(label=a.get("label"), base=a.get("base")),
        "images.import": lambda a: bk.images.import_archive(content(a), label=a.get("label")),
        "images.logs": lambda a: {"text": bk.images.logs(a["id"])},
        "images.audit_log": lambda a: bk.images.audit_log(a["id"]),
        "images.delete": lambda a: bk.images.delete(a["id"]),
        "account.get": lambda a: bk.account.get(),
        "account.usage": lambda a: bk.account.usage(),
        "sandboxes.create": lambda a: bk.sandboxes.create(
            label=a.get("label"), lifetime_minutes=a.get("lifetime_minutes"), idempotency_key=a.get("idempotency_key")
        ).data,
        "sandboxes.get": lambda a: bk.sandboxes.get(a["id"]).data,
        "sandboxes.list": lambda a: [s.data for s in bk.sandboxes.list(active_only=a.get("active_only", False))],
        "sandboxes.page": lambda a: (lambda p: {"sandboxes": [s.data for s in p], "next_cursor": p.next_cursor})(
            bk.sandboxes.list(active_only=a.get("active_only", False), limit=a["limit"], cursor=a.get("cursor"))
        ),
        "sandboxes.all": lambda a: {"ids": [s.id for s in bk.sandboxes.all(active_only=a.get("active_only", False), page_size=a["page_size"])]},
        "sandboxes.extend": lambda a: sb(a).extend(a["lifetime_minutes"]).data,
        "sandboxes.pause": lambda a: sb(a).pause(a.get("mode")).data,
        "sandboxes.resume": lambda a: sb(a).resume().data,
        "sandboxes.delete": lambda a: bk.sandboxes.delete(a["id"]),
        "storage.status": lambda a: sb(a).storage.status(),
        "storage.flush": lambda a: sb(a).storage.flush(),
        "storage.files": lambda a: sb(a).storage.files(),
        "storage.download": lambda a: (lambda b: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()})(sb(a).storage.download(a["path"])),
        "storage.delete": lambda a: sb(a).storage.delete(),
        "sandboxes.fork": lambda a: [s.data for s in sb(a).fork(a.get("count", 1))],
        "snapshots.create": lambda a: sb(a).snapshot(a.get("label")),
        "snapshots.list": lambda a: sb(a).snapshots() if a.get("id") else bk.snapshots.list(),
        "snapshots.get": lambda a: bk.snapshots.get(a["snapshot_id"]),
        "snapshots.delete": lambda a: bk.snapshots.delete(a["snapshot_id"]),
        "snapshots.restore": lambda a: bk.snapshots.restore(a["snapshot_id"], label=a.get("label")).data,
        "sandbox.exec": lambda a: sb(a).exec(a["command"], timeout=a.get("timeout"), stdin=a.get("stdin"), cwd=a.get("cwd"), env=a.get("env")),
        "sandbox.exec_stream": lambda a: {"events": list(sb(a).exec_stream(a["command"], timeout=a.get("timeout")))},
        "sandbox.exec_signal": lambda a: exec_signal(sb(a), a),
        "sandbox.stats": lambda a: sb(a).stats(),
        "files.write": lambda a: sb(a).files.write(a["path"], a["content"]),
        "files.view": lambda a: sb(a).files.view(a["path"]),
        "files.str_replace": lambda a: sb(a).files.str_replace(a["path"], a["old_str"], a["new_str"]),
        "files.ls": lambda a: sb(a).files.ls(a.get("path")),
        "files.glob": lambda a: sb(a).files.glob(a["pattern"], a.get("path")),
        "files.grep": lambda a: sb(a).files.grep(a["pattern"], a.get("path")),
        "files.upload": lambda a: sb(a).files.upload(a["path"], content(a)),
        "files.download": lambda a: (lambda b: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()})(sb(a).files.download(a["path"])),
        "files.upload_archive": lambda a: sb(a).files.upload_archive(a["path"], content(a)),
        "files.download_archive": lambda a: (lambda b: {"size": len(b), "head_hex": b[:2].hex()})(sb(a).files.download_archive(a["path"], gzip=a.get("gzip", False))),
        "processes.start": lambda a: sb(a).processes.start(a["command"]),
        "processes.stream": lambda a: {"events": list(sb(a).processes.stream(a["pid"]))},
        "processes.output": lambda a: sb(a).processes.output(a["pid"]),
        "processes.list": lambda a: sb(a).processes.list(),
        "interpreter.exec": lambda a: sb(a).interpreter.exec(a["code"]),
        "log.page": lambda a: sb(a).log.page(limit=a.get("limit"), offset=a.get("offset")),
        "log.all": lambda a: {"entries": list(sb(a).log.entries(page_size=a.get("page_size", 500)))},
        "log.follow": lambda a: follow(sb(a), a),
        "volumes.create": lambda a: bk.volumes.create(label=a.get("label"), size_gb=a.get("size_gb")),
        "volumes.get": lambda a: bk.volumes.get(a["id"]),
        "volumes.list": lambda a: bk.volumes.list(),
        "volumes.delete": lambda a: bk.volumes.delete(a["id"]),
        "webhooks.create": lambda a: bk.webhooks.create(a["url"], a["event_types"], description=a.get("description")),
        "webhooks.get": lambda a: bk.webhooks.get(a["id"]),
        "webhooks.list": lambda a: bk.webhooks.list(),
        "webhooks.page": lambda a: (lambda p: {"webhooks": list(p), "next_cursor": p.next_cursor})(bk.webhooks.page(a["limit"], a.get("cursor"))),
        "webhooks.all": lambda a: {"ids": [w["id"] for w in bk.webhooks.all(page_size=a["page_size"])]},
        "webhooks.deliveries_page": lambda a: (lambda p: {"deliveries": list(p), "next_cursor": p.next_cursor})(
            bk.webhooks.deliveries(a["id"], limit=a["limit"], cursor=a.get("cursor"))
        ),
        "webhooks.deliveries_all": lambda a: {"ids": [d["id"] for d in bk.webhooks.all_deliveries(a["id"], page_size=a["page_size"])]},
        "webhooks.delete": lambda a: bk.webhooks.delete(a["id"]),
        "webhooks.deliveries": lambda a: bk.webhooks.deliveries(a["id"], limit=a.get("limit")),
        "webhooks.test": lambda a: bk.webhooks.test(a["id"]),
        "webhooks.redeliver": lambda a: bk.webhooks.redeliver(a["id"], a["delivery_id"]),
        "mcp_connections.create": lambda a: bk.mcp_connections.create(a["label"], a["catalog_id"]),
        "mcp_connections.get": lambda a: bk.mcp_connections.get(a["id"]),
        "mcp_connections.list": lambda a: bk.mcp_connections.list(),
        "mcp_connections.delete": lambda a: bk.mcp_connections.delete(a["id"]),
        "api_keys.create": lambda a: bk.api_keys.create(a["name"], role=a.get("role")),
        "api_keys.list": lambda a: bk.api_keys.list(),
        "api_keys.revoke": lambda a: bk.api_keys.revoke(a["id"]),
        "images.list": lambda a: bk.images.list(),
        "images.page": lambda a: (lambda p: {"images": list(p), "next_cursor": p.next_cursor})(bk.images.page(a["limit"], a.get("cursor"))),
        "images.all": lambda a: {"ids": [i["id"] for i in bk.images.all(page_size=a["page_size"])]},
        "images.get": lambda a: bk.images.get(a["id"]),
        "allowed_commands.get": lambda a: bk.account.allowed_commands(),
        "allowed_commands.set": lambda a: bk.account.set_allowed_commands(a["rules"]),
        "allowed_commands.clear": lambda a: bk.account.clear_allowed_commands(),
        "tools.run": lambda a: {"text": boxkite.run_tool(sb(a), a["name"], a["arguments"])},
        "tools.openai": lambda a: boxkite.to_openai_tools(),
        "tools.anthropic": lambda a: boxkite.to_anthropic_tools(),
    }


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    key = os.environ["BOXKITE_API_KEY"]
    clients = {
        "main": calls(boxkite.Boxkite(os.environ["BOXKITE_BASE_URL"], key)),
        "old": calls(boxkite.Boxkite(os.environ.get("BOXKITE_CONFORMANCE_OLD_URL", "http://127.0.0.1:1"), key)),
        "flaky": calls(boxkite.Boxkite(os.environ.get("BOXKITE_CONFORMANCE_FLAKY_URL", "http://127.0.0.1:1"), key)),
        "html": calls(boxkite.Boxkite(os.environ.get("BOXKITE_CONFORMANCE_HTML_URL", "http://127.0.0.1:1"), key)),
    }
    saved = {}
    for case in cases:
        if "python" in case.get("skip", {}):
            continue
        out = {"name": case["name"]}
        start = time.monotonic()
        try:
            fn = clients[case.get("server", "main")][case["call"]]
            out["result"] = fn(resolve(case.get("args", {}), saved))
            saved[case["name"]] = out["result"]
        except boxkite.BoxkiteError as e:
            out["error"] = dict(e.to_dict(), display=str(e))
        except KeyError as e:
            out["error"] = {"code": "runner", "message": f"no call {case['call']} or missing {e}", "display": ""}
        out["elapsed_ms"] = int((time.monotonic() - start) * 1000)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
