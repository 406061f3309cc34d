//! Runs sdk/conformance/cases.json with this crate and prints one JSON line
//! per case: {name, result | error, elapsed_ms}. The Go test in
//! sdk/conformance starts the servers, runs this and compares.
//!
//! Usage: cargo run --example conformance -- CASES.json (servers from
//! BOXKITE_BASE_URL, BOXKITE_API_KEY, BOXKITE_CONFORMANCE_OLD_URL,
//! BOXKITE_CONFORMANCE_FLAKY_URL, BOXKITE_CONFORMANCE_HTML_URL).

use std::collections::HashMap;
use std::time::Instant;

use boxkite::{Client, CreateSandbox, Error, ExecEvent, ExecOptions};
use serde_json::{json, Value};

fn resolve(v: &Value, saved: &HashMap<String, Value>) -> Value {
    match v {
        Value::String(s) if s.starts_with("${") && s.ends_with('}') => {
            let path = &s[2..s.len() - 1];
            let mut parts = path.split('.');
            let mut cur = saved.get(parts.next().unwrap_or("")).cloned().unwrap_or(Value::Null);
            for p in parts {
                cur = match p.parse::<usize>() {
                    Ok(i) if cur.is_array() => cur[i].clone(),
                    _ => cur[p].clone(),
                };
            }
            cur
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| resolve(x, saved)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), resolve(x, saved))).collect()),
        other => other.clone(),
    }
}

fn s(a: &Value, k: &str) -> String {
    a[k].as_str().unwrap_or("").to_string()
}

fn content(a: &Value) -> Vec<u8> {
    if let Some(b64) = a["content_b64"].as_str() {
        return base64_decode(b64);
    }
    let rep = s(a, "repeat").into_bytes();
    let size = a["size"].as_u64().unwrap_or(0) as usize;
    rep.iter().cycle().take(size).copied().collect()
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &c)| acc | (val(c) as u32) << (18 - 6 * i));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

fn sha256_hex(data: &[u8]) -> String {
    // The runner checks downloads byte-exact without a crypto crate:
    // sha256sum reads the bytes from stdin.
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("sha256sum");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or("").to_string()
}

fn to_value<T: serde::Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn call(bk: &Client, name: &str, a: &Value) -> Result<Value, Error> {
    let sb = || bk.sandbox(&s(a, "id"));
    Ok(match name {
        "health" => bk.health()?,
        "ready" => bk.ready()?,
        "secrets.create" => bk.secrets().create(json!({ "name": a["name"], "value": a["value"], "allowed_hosts": a["allowed_hosts"] }))?,
        "secrets.list" => to_value(bk.secrets().list()?),
        "secrets.update" => bk.secrets().update(&s(a, "id"), json!({ "value": a["value"] }))?,
        "secrets.delete" => to_value(bk.secrets().delete(&s(a, "id"))?),
        "sandbox.http_request" => sb().http_request(json!({ "url": a["url"], "headers": a["headers"] }))?,
        "account.update" => bk.update_account(a["scrub_output"].as_bool().unwrap_or(true))?,
        "account.host" => bk.host()?,
        "account.me" => Client::new(bk.base_url(), &s(a, "token")).account_me()?,
        "auth.signup" => bk.signup(&s(a, "email"), &s(a, "password"))?,
        "auth.login" => bk.login(&s(a, "email"), &s(a, "password"))?,
        "ssh_keys.create" => bk.ssh_keys().create(json!({ "public_key": a["public_key"], "name": a["name"] }))?,
        "ssh_keys.list" => to_value(bk.ssh_keys().list()?),
        "ssh_keys.delete" => to_value(bk.ssh_keys().delete(&s(a, "id"))?),
        "bastion.takeover_token" => bk.bastion_takeover_token(json!({ "sandbox_id": a["sandbox_id"], "public_key": a["public_key"] }))?,
        "sandbox.takeover_token" => sb().takeover_token(false)?,
        "sandbox.takeover_recording" => json!({ "size": sb().takeover_recording(&s(a, "recording_id"))?.len() }),
        "files.watch" => sb().files().watch(&s(a, "path"), a["timeout_seconds"].as_f64().unwrap_or(30.0))?,
        "files.present" => {
            let paths: Vec<String> = a["filepaths"].as_array().map(|v| v.iter().map(|p| p.as_str().unwrap_or("").to_string()).collect()).unwrap_or_default();
            sb().files().present(&paths.iter().map(String::as_str).collect::<Vec<_>>())?
        }
        "processes.input" => sb().processes().input(&s(a, "pid"), &s(a, "data"))?,
        "processes.stop" => sb().processes().stop(&s(a, "pid"))?,
        "processes.kill_all" => sb().processes().kill_all()?,
        "interpreter.status" => sb().interpreter_status()?,
        "interpreter.reset" => sb().interpreter_reset()?,
        "node_interpreter.status" => sb().node_interpreter_status()?,
        "node_interpreter.reset" => sb().node_interpreter_reset()?,
        "node_interpreter.exec" => sb().node_interpreter_exec(&s(a, "code"))?,
        "sandbox.pty_exec" => sb().pty_exec(json!({ "command": s(a, "command"), "input_bytes": s(a, "input_bytes") }))?,
        "previews.create" => sb().preview_create(a["port"].as_u64().unwrap_or(0) as u16, a["ttl_seconds"].as_u64().map(|v| v as u32))?,
        "previews.list" => Value::Array(sb().previews()?),
        "previews.revoke" => {
            sb().preview_revoke(a["port"].as_u64().unwrap_or(0) as u16)?;
            Value::Null
        }
        "browser.navigate" => sb().browser().navigate(json!({ "url": s(a, "url") }))?,
        "browser.exec" => sb().browser().exec(json!({ "script": s(a, "script") }))?,
        "browser.screenshot" => sb().browser().screenshot(false)?,
        "browser.close" => sb().browser().close()?,
        "lsp.start" => sb().lsp_start(&s(a, "language"))?,
        "lsp.open" => sb().lsp_open(&s(a, "lsp_id"), &s(a, "path"), &s(a, "content"))?,
        "lsp.completion" => sb().lsp_completion(&s(a, "lsp_id"), &s(a, "path"), a["line"].as_u64().unwrap_or(0) as u32, a["character"].as_u64().unwrap_or(0) as u32)?,
        "lsp.stop" => sb().lsp_stop(&s(a, "lsp_id"))?,
        "images.create" => bk.images().create(json!({ "label": a["label"], "base": a["base"] }))?,
        "images.import" => bk.images().import(&content(a), a["label"].as_str())?,
        "images.logs" => json!({ "text": bk.images().logs(&s(a, "id"))? }),
        "images.audit_log" => to_value(bk.images().audit_log(&s(a, "id"), 0, 0)?),
        "images.delete" => to_value(bk.images().delete(&s(a, "id"))?),
        "account.get" => bk.account()?,
        "account.usage" => bk.usage()?,
        "sandboxes.create" => {
            let req = CreateSandbox {
                label: a["label"].as_str().map(String::from),
                lifetime_minutes: a["lifetime_minutes"].as_i64(),
                idempotency_key: a["idempotency_key"].as_str().map(String::from),
                ..Default::default()
            };
            to_value(bk.sandboxes().create(&req)?.info)
        }
        "sandboxes.get" => to_value(bk.sandboxes().get(&s(a, "id"))?.info),
        "sandboxes.page" => {
            let p = bk.sandboxes().page(a["active_only"].as_bool().unwrap_or(false), a["limit"].as_u64().unwrap_or(0) as u32, a["cursor"].as_str())?;
            json!({ "sandboxes": p.sandboxes.into_iter().map(|s| s.info).collect::<Vec<_>>(), "next_cursor": p.next_cursor })
        }
        "sandboxes.all" => {
            let ids = bk.sandboxes().all(a["active_only"].as_bool().unwrap_or(false), a["page_size"].as_u64().unwrap_or(100) as u32).map(|s| s.map(|s| s.id().to_string())).collect::<Result<Vec<_>, _>>()?;
            json!({ "ids": ids })
        }
        "sandboxes.list" => to_value(bk.sandboxes().list(a["active_only"].as_bool().unwrap_or(false))?.into_iter().map(|s| s.info).collect::<Vec<_>>()),
        "sandboxes.extend" => to_value(sb().extend(a["lifetime_minutes"].as_i64().unwrap_or(0))?.clone()),
        "sandboxes.pause" => to_value(sb().pause(a["mode"].as_str())?),
        "sandboxes.resume" => to_value(sb().resume()?),
        "sandboxes.delete" => {
            bk.sandboxes().delete(&s(a, "id"))?;
            Value::Null
        }
        "sandboxes.fork" => to_value(sb().fork(a["count"].as_u64().unwrap_or(1) as u32)?.into_iter().map(|s| s.info).collect::<Vec<_>>()),
        "snapshots.create" => sb().snapshot(a["label"].as_str())?,
        "snapshots.list" => to_value(if a["id"].is_string() { sb().snapshots()? } else { bk.snapshots().list(None)? }),
        "snapshots.get" => bk.snapshots().get(&s(a, "snapshot_id"))?,
        "snapshots.delete" => {
            bk.snapshots().delete(&s(a, "snapshot_id"))?;
            Value::Null
        }
        "snapshots.restore" => to_value(bk.snapshots().restore(&s(a, "snapshot_id"), a["label"].as_str())?.info),
        "sandbox.exec" => {
            let o = ExecOptions {
                timeout: a["timeout"].as_u64(),
                stdin: a["stdin"].as_str().map(String::from),
                cwd: a["cwd"].as_str().map(String::from),
                env: a["env"].as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect()),
                ..Default::default()
            };
            to_value(sb().exec_with(&s(a, "command"), &o)?)
        }
        "sandbox.exec_stream" => {
            let events: Result<Vec<_>, Error> = sb().exec_stream(&s(a, "command"))?.collect();
            json!({ "events": events? })
        }
        "sandbox.exec_signal" => {
            // Ctrl-C: signal once the command printed, read the stream to its end.
            let mut stream = sb().exec_stream(&s(a, "command"))?;
            let after = a["after_exit"].as_bool().unwrap_or(false);
            let (mut events, mut signaled) = (Vec::new(), None);
            while let Some(ev) = stream.next() {
                let ev = ev?;
                let stdout = matches!(ev, ExecEvent::Stdout { .. });
                events.push(ev);
                if !after && signaled.is_none() && stdout {
                    signaled = Some(stream.signal(&s(a, "signal"))?);
                }
            }
            if after {
                signaled = Some(stream.signal(&s(a, "signal"))?);
            }
            json!({ "exec_id": stream.exec_id, "signaled": signaled, "events": events })
        }
        "sandbox.stats" => sb().stats()?,
        "files.write" => sb().files().write(&s(a, "path"), &s(a, "content"))?,
        "files.view" => sb().files().view(&s(a, "path"))?,
        "files.str_replace" => sb().files().str_replace(&s(a, "path"), &s(a, "old_str"), &s(a, "new_str"))?,
        "files.ls" => to_value(sb().files().ls(&s(a, "path"))?),
        "files.glob" => sb().files().glob(&s(a, "pattern"), a["path"].as_str())?,
        "files.grep" => sb().files().grep(&s(a, "pattern"), a["path"].as_str())?,
        "files.upload" => sb().files().upload(&s(a, "path"), &content(a))?,
        "files.download" => {
            let b = sb().files().download(&s(a, "path"))?;
            json!({ "size": b.len(), "sha256": sha256_hex(&b) })
        }
        "storage.status" => sb().storage().status()?,
        "storage.flush" => sb().storage().flush()?,
        "storage.files" => to_value(sb().storage().files()?),
        "storage.download" => {
            let b = sb().storage().download(&s(a, "path"))?;
            json!({ "size": b.len(), "sha256": sha256_hex(&b) })
        }
        "storage.delete" => {
            sb().storage().delete()?;
            Value::Null
        }
        "files.upload_archive" => sb().files().upload_archive(&s(a, "path"), &content(a))?,
        "files.download_archive" => {
            let b = sb().files().download_archive(&s(a, "path"), a["gzip"].as_bool().unwrap_or(false))?;
            let head: String = b.iter().take(2).map(|x| format!("{:02x}", x)).collect();
            json!({ "size": b.len(), "head_hex": head })
        }
        "processes.start" => sb().processes().start(&s(a, "command"))?,
        "processes.stream" => {
            let sandbox = sb();
            let events: Result<Vec<_>, Error> = sandbox.processes().stream(&s(a, "pid"), 0)?.collect();
            json!({ "events": events? })
        }
        "processes.output" => sb().processes().output(&s(a, "pid"), 0)?,
        "processes.list" => to_value(sb().processes().list()?),
        "interpreter.exec" => sb().interpreter_exec(&s(a, "code"))?,
        "log.page" => to_value(sb().log().page(a["limit"].as_i64().unwrap_or(50), a["offset"].as_i64().unwrap_or(0))?),
        "log.all" => {
            let sandbox = sb();
            let entries: Result<Vec<_>, Error> = sandbox.log().entries(a["page_size"].as_i64().unwrap_or(500)).collect();
            json!({ "entries": entries? })
        }
        "log.follow" => {
            let n = a["count"].as_u64().unwrap_or(1) as usize;
            let sandbox = sb();
            let entries: Result<Vec<_>, Error> = sandbox.log().follow(a["last_event_id"].as_str()).take(n).collect();
            json!({ "entries": entries? })
        }
        "volumes.create" => bk.volumes().create(json!({ "label": a["label"] }))?,
        "volumes.get" => bk.volumes().get(&s(a, "id"))?,
        "volumes.list" => to_value(bk.volumes().list()?),
        "volumes.delete" => to_value(bk.volumes().delete(&s(a, "id"))?),
        "webhooks.create" => bk.webhooks().create(json!({ "url": a["url"], "event_types": a["event_types"], "description": a["description"] }))?,
        "webhooks.get" => bk.webhooks().get(&s(a, "id"))?,
        "webhooks.list" => to_value(bk.webhooks().list()?),
        "webhooks.page" => {
            let p = bk.webhooks().page(a["limit"].as_u64().unwrap_or(0) as u32, a["cursor"].as_str())?;
            json!({ "webhooks": p.items, "next_cursor": p.next_cursor })
        }
        "webhooks.all" => {
            let ids = bk.webhooks().all(a["page_size"].as_u64().unwrap_or(100) as u32).map(|w| w.map(|w| w["id"].clone())).collect::<Result<Vec<_>, _>>()?;
            json!({ "ids": ids })
        }
        "webhooks.deliveries_page" => {
            let p = bk.webhooks().deliveries_page(&s(a, "id"), a["limit"].as_u64().map(|l| l as u32), a["cursor"].as_str())?;
            json!({ "deliveries": p.items, "next_cursor": p.next_cursor })
        }
        "webhooks.deliveries_all" => {
            let id = s(a, "id");
            let hooks = bk.webhooks();
            let ids = hooks.all_deliveries(&id, a["page_size"].as_u64().unwrap_or(100) as u32).map(|d| d.map(|d| d["id"].clone())).collect::<Result<Vec<_>, _>>()?;
            json!({ "ids": ids })
        }
        "webhooks.delete" => to_value(bk.webhooks().delete(&s(a, "id"))?),
        "webhooks.deliveries" => to_value(bk.webhooks().deliveries(&s(a, "id"), a["limit"].as_u64().map(|l| l as u32), None)?),
        "webhooks.test" => bk.webhooks().test(&s(a, "id"))?,
        "webhooks.redeliver" => bk.webhooks().redeliver(&s(a, "id"), &s(a, "delivery_id"))?,
        "mcp_connections.create" => bk.mcp_connections().create(json!({ "label": a["label"], "catalog_id": a["catalog_id"] }))?,
        "mcp_connections.get" => bk.mcp_connections().get(&s(a, "id"))?,
        "mcp_connections.list" => to_value(bk.mcp_connections().list()?),
        "mcp_connections.delete" => to_value(bk.mcp_connections().delete(&s(a, "id"))?),
        "api_keys.create" => bk.api_keys().create(json!({ "name": a["name"], "role": a["role"] }))?,
        "api_keys.list" => to_value(bk.api_keys().list()?),
        "api_keys.revoke" => to_value(bk.api_keys().delete(&s(a, "id"))?),
        "images.list" => to_value(bk.images().list()?),
        "images.page" => {
            let p = bk.images().page(a["limit"].as_u64().unwrap_or(0) as u32, a["cursor"].as_str())?;
            json!({ "images": p.items, "next_cursor": p.next_cursor })
        }
        "images.all" => {
            let ids = bk.images().all(a["page_size"].as_u64().unwrap_or(100) as u32).map(|i| i.map(|i| i["id"].clone())).collect::<Result<Vec<_>, _>>()?;
            json!({ "ids": ids })
        }
        "images.get" => bk.images().get(&s(a, "id"))?,
        "allowed_commands.get" => bk.allowed_commands()?,
        "allowed_commands.set" => bk.set_allowed_commands(a["rules"].clone())?,
        "allowed_commands.clear" => to_value(bk.clear_allowed_commands()?),
        other => return Err(Error::new("runner", format!("no call {}", other), "")),
    })
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: conformance CASES.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read cases")).expect("parse cases");
    let key = std::env::var("BOXKITE_API_KEY").unwrap_or_default();
    let url = |k: &str| std::env::var(k).unwrap_or_else(|_| "http://127.0.0.1:1".to_string());
    let clients: HashMap<&str, Client> = [
        ("main", Client::new(&url("BOXKITE_BASE_URL"), &key)),
        ("old", Client::new(&url("BOXKITE_CONFORMANCE_OLD_URL"), &key)),
        ("flaky", Client::new(&url("BOXKITE_CONFORMANCE_FLAKY_URL"), &key)),
        ("html", Client::new(&url("BOXKITE_CONFORMANCE_HTML_URL"), &key)),
    ]
    .into_iter()
    .collect();
    let mut saved: HashMap<String, Value> = HashMap::new();
    for c in doc["cases"].as_array().expect("cases") {
        if c["skip"].get("rust").is_some() {
            continue;
        }
        let name = s(c, "name");
        let empty = json!({});
        let args = resolve(if c["args"].is_null() { &empty } else { &c["args"] }, &saved);
        let server = c["server"].as_str().unwrap_or("main");
        let start = Instant::now();
        let mut out = json!({ "name": name });
        match call(&clients[server], c["call"].as_str().unwrap_or(""), &args) {
            Ok(v) => {
                saved.insert(name.clone(), v.clone());
                out["result"] = v;
            }
            Err(e) => {
                out["error"] = json!({
                    "code": e.code, "message": e.message, "hint": e.hint, "status": e.status,
                    "details": e.details, "request_id": e.request_id, "display": e.to_string(),
                });
            }
        }
        out["elapsed_ms"] = json!(start.elapsed().as_millis() as u64);
        println!("{}", out);
    }
}
