// Runs sdk/conformance/cases.json with the TypeScript SDK (built into
// dist/) and prints one JSON line per case: {name, result | error,
// elapsed_ms}. The Go test in sdk/conformance starts the servers, runs
// this and compares.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { Boxkite, BoxkiteError, runTool, toAnthropicTools, toOpenAITools } from "../dist/index.js";

const REF = /^\$\{([^}]+)\}$/;

function resolve(v, saved) {
  if (typeof v === "string") {
    const m = REF.exec(v);
    if (!m) return v;
    return m[1].split(".").reduce((cur, part) => cur[Array.isArray(cur) ? Number(part) : part], saved);
  }
  if (Array.isArray(v)) return v.map((x) => resolve(x, saved));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x, saved)]));
  return v;
}

function content(a) {
  if (a.content_b64) return new Uint8Array(Buffer.from(a.content_b64, "base64"));
  const rep = Buffer.from(a.repeat);
  const out = Buffer.alloc(a.size);
  for (let i = 0; i < a.size; i += rep.length) rep.copy(out, i, 0, Math.min(rep.length, a.size - i));
  return new Uint8Array(out);
}

const hex = (b) => Buffer.from(b).toString("hex");
const collect = async (it) => {
  const out = [];
  for await (const x of it) out.push(x);
  return out;
};

function calls(bk) {
  const sb = (a) => bk.sandbox(a.id);
  return {
    health: () => bk.health(),
    ready: () => bk.ready(),
    "secrets.create": (a) => bk.secrets.create({ name: a.name, value: a.value, allowed_hosts: a.allowed_hosts }),
    "secrets.list": () => bk.secrets.list(),
    "secrets.update": (a) => bk.secrets.update(a.id, { value: a.value, allowed_hosts: a.allowed_hosts }),
    "secrets.delete": (a) => bk.secrets.delete(a.id),
    "sandbox.http_request": (a) => sb(a).httpRequest({ url: a.url, method: a.method, headers: a.headers, body: a.body }),
    "account.update": (a) => bk.account.update({ scrub_output: a.scrub_output }),
    "account.host": () => bk.account.host(),
    "account.me": (a) => new Boxkite({ baseUrl: bk.baseUrl, apiKey: a.token }).account.me(),
    "auth.signup": (a) => bk.signup(a.email, a.password),
    "auth.login": (a) => bk.login(a.email, a.password),
    "ssh_keys.create": (a) => bk.sshKeys.create({ public_key: a.public_key, name: a.name }),
    "ssh_keys.list": () => bk.sshKeys.list(),
    "ssh_keys.delete": (a) => bk.sshKeys.delete(a.id),
    "bastion.takeover_token": (a) => bk.bastionTakeoverToken({ sandbox_id: a.sandbox_id, public_key: a.public_key }),
    "sandbox.takeover_token": (a) => sb(a).takeoverToken(),
    "sandbox.takeover_recording": async (a) => ({ size: (await sb(a).takeoverRecording(a.recording_id)).length }),
    "files.watch": (a) => sb(a).files.watch(a.path, { timeout_seconds: a.timeout_seconds }),
    "files.present": (a) => sb(a).files.present(a.filepaths),
    "processes.input": (a) => sb(a).processes.input(a.pid, a.data),
    "processes.stop": (a) => sb(a).processes.stop(a.pid),
    "processes.kill_all": (a) => sb(a).processes.killAll(),
    "node_interpreter.exec": (a) => sb(a).nodeInterpreter.exec(a.code),
    "node_interpreter.status": (a) => sb(a).nodeInterpreter.status(),
    "node_interpreter.reset": (a) => sb(a).nodeInterpreter.reset(),
    "sandbox.pty_exec": (a) => sb(a).ptyExec({ command: a.command, input_bytes: a.input_bytes }),
    "previews.create": (a) => sb(a).previews.create(a.port, { ttlSeconds: a.ttl_seconds }),
    "previews.list": (a) => sb(a).previews.list(),
    "previews.revoke": (a) => sb(a).previews.revoke(a.port),
    "browser.navigate": (a) => sb(a).browser.navigate({ url: a.url }),
    "browser.exec": (a) => sb(a).browser.exec({ script: a.script }),
    "browser.screenshot": (a) => sb(a).browser.screenshot(),
    "browser.close": (a) => sb(a).browser.close(),
    "interpreter.status": (a) => sb(a).interpreter.status(),
    "interpreter.reset": (a) => sb(a).interpreter.reset(),
    "lsp.start": (a) => sb(a).lsp.start(a.language),
    "lsp.open": (a) => sb(a).lsp.open(a.lsp_id, a.path, a.content),
    "lsp.completion": (a) => sb(a).lsp.completion(a.lsp_id, a.path, a.line, a.character),
    "lsp.stop": (a) => sb(a).lsp.stop(a.lsp_id),
    "images.create": (a) => bk.images.create({ label: a.label, base: a.base }),
    "images.import": (a) => bk.images.importArchive(content(a), a.label),
    "images.logs": async (a) => ({ text: await bk.images.logs(a.id) }),
    "images.audit_log": (a) => bk.images.auditLog(a.id),
    "images.delete": (a) => bk.images.delete(a.id),
    "account.get": () => bk.account.get(),
    "account.usage": () => bk.account.usage(),
    "sandboxes.create": async (a) =>
      (await bk.sandboxes.create({ label: a.label, lifetime_minutes: a.lifetime_minutes }, { idempotencyKey: a.idempotency_key })).data,
    "sandboxes.get": async (a) => (await bk.sandboxes.get(a.id)).data,
    "sandboxes.list": async (a) => (await bk.sandboxes.list({ activeOnly: a.active_only })).map((s) => s.data),
    "sandboxes.page": async (a) => {
      const p = await bk.sandboxes.page({ activeOnly: a.active_only, limit: a.limit, cursor: a.cursor });
      return { sandboxes: p.sandboxes.map((s) => s.data), next_cursor: p.nextCursor ?? null };
    },
    "sandboxes.all": async (a) => {
      const ids = [];
      for await (const s of bk.sandboxes.all({ activeOnly: a.active_only, pageSize: a.page_size })) ids.push(s.id);
      return { ids };
    },
    "sandboxes.extend": async (a) => (await sb(a).extend(a.lifetime_minutes)).data,
    "sandboxes.pause": async (a) => (await sb(a).pause(a.mode)).data,
    "sandboxes.resume": async (a) => (await sb(a).resume()).data,
    "sandboxes.delete": (a) => bk.sandboxes.delete(a.id),
    "sandboxes.fork": async (a) => (await sb(a).fork(a.count)).map((s) => s.data),
    "snapshots.create": (a) => sb(a).snapshot({ label: a.label }),
    "snapshots.list": (a) => (a.id ? sb(a).snapshots() : bk.snapshots.list()),
    "snapshots.get": (a) => bk.snapshots.get(a.snapshot_id),
    "snapshots.delete": (a) => bk.snapshots.delete(a.snapshot_id),
    "snapshots.restore": async (a) => (await bk.snapshots.restore(a.snapshot_id, { label: a.label })).data,
    "sandbox.exec": (a) => sb(a).exec(a.command, { timeout: a.timeout, stdin: a.stdin, cwd: a.cwd, env: a.env }),
    "sandbox.exec_stream": async (a) => ({ events: await collect(await sb(a).execStream(a.command, { timeout: a.timeout })) }),
    "sandbox.exec_signal": async (a) => {
      // Ctrl-C: signal once the command printed, read the stream to its end.
      const stream = await sb(a).execStream(a.command);
      const events = [];
      let signaled = null;
      for await (const ev of stream) {
        events.push(ev);
        if (!a.after_exit && !signaled && ev.type === "stdout") signaled = await stream.signal(a.signal);
      }
      if (a.after_exit) signaled = await stream.signal(a.signal);
      return { exec_id: stream.execId, signaled, events };
    },
    "sandbox.stats": (a) => sb(a).stats(),
    "files.write": (a) => sb(a).files.write(a.path, a.content),
    "files.view": (a) => sb(a).files.view(a.path),
    "files.str_replace": (a) => sb(a).files.strReplace(a.path, a.old_str, a.new_str),
    "files.ls": (a) => sb(a).files.ls(a.path),
    "files.glob": (a) => sb(a).files.glob(a.pattern, a.path),
    "files.grep": (a) => sb(a).files.grep(a.pattern, { path: a.path }),
    "files.upload": (a) => sb(a).files.upload(a.path, content(a)),
    "files.download": async (a) => {
      const b = await sb(a).files.download(a.path);
      return { size: b.length, sha256: createHash("sha256").update(b).digest("hex") };
    },
    "storage.status": (a) => sb(a).storage.status(),
    "storage.flush": (a) => sb(a).storage.flush(),
    "storage.files": (a) => sb(a).storage.files(),
    "storage.download": async (a) => {
      const b = await sb(a).storage.download(a.path);
      return { size: b.length, sha256: createHash("sha256").update(b).digest("hex") };
    },
    "storage.delete": (a) => sb(a).storage.delete(),
    "files.upload_archive": (a) => sb(a).files.uploadArchive(a.path, content(a)),
    "files.download_archive": async (a) => {
      const b = await sb(a).files.downloadArchive(a.path, { gzip: a.gzip });
      return { size: b.length, head_hex: hex(b.subarray(0, 2)) };
    },
    "processes.start": (a) => sb(a).processes.start(a.command),
    "processes.stream": async (a) => ({ events: await collect(sb(a).processes.stream(a.pid)) }),
    "processes.output": (a) => sb(a).processes.output(a.pid),
    "processes.list": (a) => sb(a).processes.list(),
    "interpreter.exec": (a) => sb(a).interpreter.exec(a.code),
    "log.page": (a) => sb(a).log.page({ limit: a.limit, offset: a.offset }),
    "log.all": async (a) => ({ entries: await collect(sb(a).log.entries(a.page_size ?? 500)) }),
    "log.follow": async (a) => {
      const entries = [];
      for await (const e of sb(a).log.follow({ lastEventId: a.last_event_id })) {
        entries.push(e);
        if (entries.length === a.count) break;
      }
      return { entries };
    },
    "volumes.create": (a) => bk.volumes.create({ label: a.label, size_gb: a.size_gb }),
    "volumes.get": (a) => bk.volumes.get(a.id),
    "volumes.list": () => bk.volumes.list(),
    "volumes.delete": (a) => bk.volumes.delete(a.id),
    "webhooks.create": (a) => bk.webhooks.create({ url: a.url, event_types: a.event_types, description: a.description }),
    "webhooks.get": (a) => bk.webhooks.get(a.id),
    "webhooks.list": () => bk.webhooks.list(),
    "webhooks.page": async (a) => {
      const p = await bk.webhooks.page({ limit: a.limit, cursor: a.cursor });
      return { webhooks: p.items, next_cursor: p.nextCursor ?? null };
    },
    "webhooks.all": async (a) => {
      const ids = [];
      for await (const w of bk.webhooks.all({ pageSize: a.page_size })) ids.push(w.id);
      return { ids };
    },
    "webhooks.deliveries_page": async (a) => {
      const p = await bk.webhooks.deliveriesPage(a.id, { limit: a.limit, cursor: a.cursor });
      return { deliveries: p.items, next_cursor: p.nextCursor ?? null };
    },
    "webhooks.deliveries_all": async (a) => {
      const ids = [];
      for await (const d of bk.webhooks.allDeliveries(a.id, { pageSize: a.page_size })) ids.push(d.id);
      return { ids };
    },
    "webhooks.delete": (a) => bk.webhooks.delete(a.id),
    "webhooks.deliveries": (a) => bk.webhooks.deliveries(a.id, { limit: a.limit }),
    "webhooks.test": (a) => bk.webhooks.test(a.id),
    "webhooks.redeliver": (a) => bk.webhooks.redeliver(a.id, a.delivery_id),
    "mcp_connections.create": (a) => bk.mcpConnections.create({ label: a.label, catalog_id: a.catalog_id }),
    "mcp_connections.get": (a) => bk.mcpConnections.get(a.id),
    "mcp_connections.list": () => bk.mcpConnections.list(),
    "mcp_connections.delete": (a) => bk.mcpConnections.delete(a.id),
    "api_keys.create": (a) => bk.apiKeys.create({ name: a.name, role: a.role }),
    "api_keys.list": () => bk.apiKeys.list(),
    "api_keys.revoke": (a) => bk.apiKeys.revoke(a.id),
    "images.list": () => bk.images.list(),
    "images.page": async (a) => {
      const p = await bk.images.page({ limit: a.limit, cursor: a.cursor });
      return { images: p.items, next_cursor: p.nextCursor ?? null };
    },
    "images.all": async (a) => {
      const ids = [];
      for await (const i of bk.images.all({ pageSize: a.page_size })) ids.push(i.id);
      return { ids };
    },
    "images.get": (a) => bk.images.get(a.id),
    "allowed_commands.get": () => bk.account.allowedCommands(),
    "allowed_commands.set": (a) => bk.account.setAllowedCommands(a.rules),
    "allowed_commands.clear": () => bk.account.clearAllowedCommands(),
    "tools.run": async (a) => ({ text: await runTool(sb(a), a.name, a.arguments) }),
    "tools.openai": () => toOpenAITools(),
    "tools.anthropic": () => toAnthropicTools(),
  };
}

const cases = JSON.parse(await readFile(process.argv[2], "utf8")).cases;
const key = process.env.BOXKITE_API_KEY;
const clients = {
  main: calls(new Boxkite({ baseUrl: process.env.BOXKITE_BASE_URL, apiKey: key })),
  old: calls(new Boxkite({ baseUrl: process.env.BOXKITE_CONFORMANCE_OLD_URL ?? "http://127.0.0.1:1", apiKey: key })),
  flaky: calls(new Boxkite({ baseUrl: process.env.BOXKITE_CONFORMANCE_FLAKY_URL ?? "http://127.0.0.1:1", apiKey: key })),
  html: calls(new Boxkite({ baseUrl: process.env.BOXKITE_CONFORMANCE_HTML_URL ?? "http://127.0.0.1:1", apiKey: key })),
};
const saved = {};
for (const c of cases) {
  if (c.skip && "typescript" in c.skip) continue;
  const out = { name: c.name };
  const start = performance.now();
  try {
    const fn = clients[c.server ?? "main"][c.call];
    if (!fn) throw new Error(`no call ${c.call}`);
    const result = await fn(resolve(c.args ?? {}, saved));
    out.result = result === undefined ? null : JSON.parse(JSON.stringify(result));
    saved[c.name] = out.result;
  } catch (e) {
    if (!(e instanceof BoxkiteError)) {
      out.error = { code: "runner", message: String(e?.stack ?? e), display: "" };
    } else {
      out.error = { ...e.toJSON(), display: String(e) };
    }
  }
  out.elapsed_ms = Math.round(performance.now() - start);
  process.stdout.write(`${JSON.stringify(out)}\n`);
}
