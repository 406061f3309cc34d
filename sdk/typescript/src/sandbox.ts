/** The {@link Sandbox} handle: exec, files, processes, audit log. */

import { BoxkiteError, CODE_CONNECTION, CODE_SERVER_TOO_OLD } from "./errors.js";
import { type Body, type Transport, NDJSON_TYPES, SSE_TYPES, newIdempotencyKey, seg } from "./http.js";
import { eventError, ndjson, sse } from "./streams.js";
import type {
  ArchiveResult,
  BrowserCloseResult,
  BrowserExecRequest,
  BrowserExecResult,
  BrowserNavigateRequest,
  BrowserNavigateResult,
  BrowserScreenshotRequest,
  BrowserScreenshotResult,
  ExecEvent,
  ExecResult,
  ExecSignal,
  ExecSignalResult,
  FileCreateResult,
  FileWriteResult,
  GlobResult,
  GrepResult,
  HTTPRequest,
  HTTPResponse,
  InterpreterExecResult,
  InterpreterReset,
  InterpreterStatus,
  KillAllResult,
  LogEntry,
  LogPage,
  LsEntry,
  LSPCompletionResult,
  LSPStarted,
  LSPStatus,
  PresentFilesResult,
  Preview,
  ProcessEvent,
  ProcessInfo,
  ProcessInputResult,
  ProcessOutput,
  ProcessStarted,
  ProcessStartRequest,
  ProcessStopResult,
  PTYExecRequest,
  PTYExecResult,
  SandboxRecord,
  SandboxStats,
  Snapshot,
  StoredFile,
  StoredFiles,
  StrReplaceResult,
  SyncStatus,
  TakeoverToken,
  ViewResult,
  WatchResult,
} from "./types.js";

/** An exec call waits for the command's own timeout plus this. */
const EXEC_MARGIN_MS = 30_000;
/** Chromium's start, and the server's own margin, on top of a browser call's timeout. */
const BROWSER_MARGIN_MS = 90_000;
const DEFAULT_EXEC_TIMEOUT_S = 30;
/** How often in a row a live stream is reopened when it breaks without delivering. */
const STREAM_RETRIES = 5;
const STREAM_PAUSE_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ExecOptions {
  /** Seconds, 1..3600 (default 30). */
  timeout?: number;
  stdin?: string;
  cwd?: string;
  env?: Record<string, string>;
  description?: string;
  max_output_bytes?: number;
  on_output_limit?: "truncate" | "stop";
  /**
   * Environment variable → secret name: the secret's value in this
   * command's environment only (docs/secrets.md, servers started with
   * --allow-secret-env); echoes are redacted from the result. Not for
   * execStream: the server refuses it on streams.
   */
  secret_env?: Record<string, string>;
  signal?: AbortSignal;
}

function execBody(command: string, o: ExecOptions): Record<string, unknown> {
  const { signal: _signal, ...rest } = o;
  return { command, ...rest };
}

/**
 * The events of a streamed exec: `{type: "stdout"|"stderr", data}` while the
 * command runs, then `{type: "exit", exit_code, duration_ms, …}`. An error
 * event (the sandbox was lost mid-exec) is thrown as a BoxkiteError. After
 * the loop, `result` is the exit event and `stdout`/`stderr` the output.
 * While it runs, `signal("SIGINT")` is Ctrl-C: the command's process group
 * gets the signal, and the stream ends as the command does.
 */
export class ExecStream implements AsyncIterable<ExecEvent> {
  result?: Extract<ExecEvent, { type: "exit" }>;
  stdout = "";
  stderr = "";

  /**
   * @param execId the id the answer's X-Exec-Id header named ("" from a
   *   server or sidecar older than it), which {@link ExecStream.signal} uses.
   */
  constructor(
    private readonly events: AsyncGenerator<ExecEvent>,
    readonly execId = "",
    private readonly sb?: Sandbox,
  ) {}

  /**
   * Sends signal (default SIGINT) to the command's process group while it
   * runs; how the command takes it shows in the exit event. A command that
   * ended is a `not_found` BoxkiteError; a server too old to name its
   * streamed execs is `server_too_old`.
   */
  async signal(signal: ExecSignal = "SIGINT"): Promise<ExecSignalResult> {
    if (!this.sb || !this.execId) {
      throw new BoxkiteError({
        code: CODE_SERVER_TOO_OLD,
        message: "this exec stream has no id to signal it by (no X-Exec-Id header)",
        hint: "upgrade the boxkite server (and recreate the sandbox, for its sidecar) to signal a streamed exec",
      });
    }
    return this.sb.signalExec(this.execId, signal);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ExecEvent> {
    for await (const ev of this.events) {
      if (ev.type === "error") throw eventError(ev);
      if (ev.type === "stdout") this.stdout += ev.data;
      else if (ev.type === "stderr") this.stderr += ev.data;
      else if (ev.type === "exit") this.result = ev;
      yield ev;
    }
  }

  /** Drains the stream; returns the exit event with the collected output. */
  async wait(): Promise<ExecResult> {
    for await (const _ of this) {
      // collected by the iterator
    }
    return { ...this.result, stdout: this.stdout, stderr: this.stderr } as ExecResult;
  }
}

/** Files of one sandbox. Relative paths are under /workspace. */
export class Files {
  constructor(private readonly sb: Sandbox) {}

  /** Writes a text file, on disk before the answer. */
  write(path: string, content: string, description?: string): Promise<FileCreateResult> {
    return this.sb.post("/files", { path, content, description });
  }

  /** A file with line numbers, or a directory's entries. */
  view(path: string, viewRange?: [number, number]): Promise<ViewResult> {
    return this.sb.post("/files/view", { path, view_range: viewRange });
  }

  strReplace(path: string, oldStr: string, newStr: string, replaceAll?: boolean): Promise<StrReplaceResult> {
    return this.sb.post("/files/str-replace", { path, old_str: oldStr, new_str: newStr, replace_all: replaceAll });
  }

  /** A directory's entries (default: the workspace). A file is refused (`not_a_directory`), a missing path is `not_found`. */
  async ls(path?: string): Promise<LsEntry[]> {
    return (await this.sb.post<{ entries?: LsEntry[] }>("/files/ls", { path })).entries ?? [];
  }

  glob(pattern: string, path?: string): Promise<GlobResult> {
    return this.sb.post("/files/glob", { pattern, path });
  }

  grep(pattern: string, o: { path?: string; glob?: string; max_matches?: number } = {}): Promise<GrepResult> {
    return this.sb.post("/files/grep", { pattern, ...o });
  }

  /** Waits for changes under path, at most timeoutSeconds. */
  watch(path?: string, o: { timeout_seconds?: number; recursive?: boolean } = {}): Promise<WatchResult> {
    const wait = (o.timeout_seconds ?? 30) * 1000 + EXEC_MARGIN_MS;
    return this.sb.post("/files/watch", { path, ...o }, wait);
  }

  /** Marks files as outputs for the user. */
  present(filepaths: string[]): Promise<PresentFilesResult> {
    return this.sb.post("/files/present", { filepaths });
  }

  /** Writes bytes (or a stream of them) to path. */
  upload(path: string, data: Body): Promise<FileWriteResult> {
    return this.sb.t.json("PUT", this.sb.path("/files/raw"), {
      body: data,
      query: { path },
      headers: { "Content-Type": "application/octet-stream" },
    });
  }

  /** A file's bytes. */
  async download(path: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.open(path)).arrayBuffer());
  }

  /** The streamed answer of GET files/raw: read its body as a stream. */
  open(path: string, signal?: AbortSignal): Promise<Response> {
    return this.sb.t.raw("GET", this.sb.path("/files/raw"), { query: { path }, signal });
  }

  /** Extracts a tar or tar.gz under directory. */
  uploadArchive(directory: string, archive: Body): Promise<ArchiveResult> {
    return this.sb.t.json("POST", this.sb.path("/files/archive"), {
      body: archive,
      query: { path: directory },
      headers: { "Content-Type": "application/gzip" },
    });
  }

  /** directory as a tar (gzip: tar.gz), names relative to it. */
  async downloadArchive(directory: string, o: { gzip?: boolean } = {}): Promise<Uint8Array> {
    const resp = await this.sb.t.raw("GET", this.sb.path("/files/archive"), {
      query: { path: directory, gzip: o.gzip ? "1" : undefined },
    });
    return new Uint8Array(await resp.arrayBuffer());
  }
}

/** Background processes of one sandbox. */
export class Processes {
  constructor(private readonly sb: Sandbox) {}

  /** Starts a background process; restart: true starts it again when the sandbox resumes from a filesystem pause. */
  start(command: string, o: Omit<ProcessStartRequest, "command"> = {}): Promise<ProcessStarted> {
    return this.sb.post("/processes", { command, ...o });
  }

  async list(): Promise<ProcessInfo[]> {
    return (await this.sb.t.json<{ processes?: ProcessInfo[] }>("GET", this.sb.path("/processes"))).processes ?? [];
  }

  output(pid: string, sinceOffset?: number): Promise<ProcessOutput> {
    return this.sb.t.json("GET", this.sb.path(`/processes/${seg(pid)}/output`), { query: { since_offset: sinceOffset } });
  }

  /**
   * The process's output events, then its exit event; a broken stream resumes from the last offset.
   * An error event ends it, thrown as a BoxkiteError (sandbox_operation_failed: the stream was cut).
   */
  async *stream(pid: string, sinceOffset?: number): AsyncGenerator<ProcessEvent> {
    let offset = sinceOffset;
    for (let failures = 0; failures <= STREAM_RETRIES; failures++) {
      try {
        const resp = await this.sb.t.raw("GET", this.sb.path(`/processes/${seg(pid)}/stream`), {
          query: { since_offset: offset },
          headers: { Accept: "text/event-stream" },
          timeoutMs: 0,
          streamTypes: SSE_TYPES,
        });
        for await (const ev of sse(resp.body)) {
          const e = JSON.parse(ev.data) as ProcessEvent;
          // An error event (a scrubbed stream cut at an event over the
          // cap it holds) ends the stream: thrown, never resumed.
          if (e.type === "error") throw eventError(e);
          failures = 0;
          if (e.type === "output" && e.next_offset !== undefined) offset = e.next_offset;
          yield e;
          if (e.type === "exit") return;
        }
      } catch (e) {
        if (e instanceof BoxkiteError && e.code !== CODE_CONNECTION) throw e;
      }
      await sleep(STREAM_PAUSE_MS * (failures + 1));
    }
    throw new BoxkiteError({ code: CODE_CONNECTION, message: `process ${pid}: the output stream keeps breaking` });
  }

  input(pid: string, data: string): Promise<ProcessInputResult> {
    return this.sb.post(`/processes/${seg(pid)}/input`, { data });
  }

  stop(pid: string): Promise<ProcessStopResult> {
    return this.sb.post(`/processes/${seg(pid)}/stop`, {});
  }

  killAll(): Promise<KillAllResult> {
    return this.sb.post("/processes/kill-all", {});
  }
}

/**
 * The sandbox's persistent Python interpreter (`sb.interpreter`), or its
 * Node.js one (`sb.nodeInterpreter`: JavaScript, the result is util.inspect
 * of the last value, a promise awaited).
 */
export class Interpreter {
  constructor(
    private readonly sb: Sandbox,
    private readonly prefix = "/interpreter",
  ) {}

  exec(code: string, timeout?: number): Promise<InterpreterExecResult> {
    return this.sb.post(`${this.prefix}/exec`, { code, timeout }, (timeout ?? DEFAULT_EXEC_TIMEOUT_S) * 1000 + EXEC_MARGIN_MS);
  }

  reset(): Promise<InterpreterReset> {
    return this.sb.post(`${this.prefix}/reset`, {});
  }

  status(): Promise<InterpreterStatus> {
    return this.sb.t.json("GET", this.sb.path(`${this.prefix}/status`));
  }
}

/**
 * The sandbox's headless Chromium (the browser tools; the image must have
 * chromium). Page failures come back in `error` with a 200; only a bad
 * request throws.
 */
export class Browser {
  constructor(private readonly sb: Sandbox) {}

  navigate(req: BrowserNavigateRequest): Promise<BrowserNavigateResult> {
    return this.sb.post("/browser/navigate", { ...req }, (req.timeout_seconds ?? 30) * 1000 + BROWSER_MARGIN_MS);
  }

  /** Runs JavaScript in the page: its value as JSON in `result`. */
  exec(req: BrowserExecRequest): Promise<BrowserExecResult> {
    return this.sb.post("/browser/exec", { ...req }, (req.timeout_seconds ?? 10) * 1000 + BROWSER_MARGIN_MS);
  }

  /** A PNG of the page, base64 in `image_base64`. */
  screenshot(req: BrowserScreenshotRequest = {}): Promise<BrowserScreenshotResult> {
    return this.sb.post("/browser/screenshot", { ...req }, 120_000 + BROWSER_MARGIN_MS);
  }

  /** Stops Chromium: `status` is closed or not_running. */
  close(): Promise<BrowserCloseResult> {
    return this.sb.post("/browser/close", {});
  }
}

/** Preview URLs of ports inside the sandbox. */
export class Previews {
  constructor(private readonly sb: Sandbox) {}

  /** A preview URL of port, valid ttlSeconds (30..86400, default 3600); the token is shown once. */
  create(port: number, o: { ttlSeconds?: number } = {}): Promise<Preview> {
    return this.sb.post(`/preview/${port}`, o.ttlSeconds ? { ttl_seconds: o.ttlSeconds } : {});
  }

  /** The live previews, without tokens. */
  async list(): Promise<Preview[]> {
    return (await this.sb.t.json<Preview[] | undefined>("GET", this.sb.path("/previews"))) ?? [];
  }

  /** Revokes every live preview of port: their URLs answer 401 at once. */
  async revoke(port: number): Promise<void> {
    await this.sb.t.json("DELETE", this.sb.path(`/preview/${port}`));
  }
}

/**
 * The sandbox's workspace synced to the server's object storage (S3, Azure
 * Blob or GCS, when the operator configured one; otherwise every call is
 * 503 storage_unavailable). The files stay listable and downloadable after
 * the sandbox is destroyed.
 */
export class Storage {
  constructor(private readonly sb: Sandbox) {}

  /** The sync's state: state (syncing, final, deleted), pending, last_flush_at, last_error, … */
  status(): Promise<SyncStatus> {
    return this.sb.t.json("GET", this.sb.path("/sync"));
  }

  /** Flushes the workspace now, without waiting for files to settle (502 storage_failed when the store refuses). */
  flush(): Promise<SyncStatus> {
    return this.sb.t.json("POST", this.sb.path("/sync/flush"));
  }

  /** The stored files, paths relative to /workspace. */
  async files(): Promise<StoredFile[]> {
    return (await this.sb.t.json<StoredFiles | undefined>("GET", this.sb.path("/storage/files")))?.files ?? [];
  }

  /** A stored file's bytes (path relative to /workspace). */
  async download(path: string): Promise<Uint8Array> {
    return new Uint8Array(await (await this.open(path)).arrayBuffer());
  }

  /** The streamed answer of GET storage/files/raw: read its body as a stream. */
  open(path: string, signal?: AbortSignal): Promise<Response> {
    return this.sb.t.raw("GET", this.sb.path("/storage/files/raw"), { query: { path }, signal });
  }

  /** Deletes the stored files (a running sandbox is synced again from scratch). */
  async delete(): Promise<void> {
    await this.sb.t.json("DELETE", this.sb.path("/storage"));
  }
}

/** Language servers in the sandbox. */
export class LSP {
  constructor(private readonly sb: Sandbox) {}

  start(language: string): Promise<LSPStarted> {
    return this.sb.post("/lsp/start", { language });
  }

  open(lspId: string, path: string, content: string): Promise<LSPStatus> {
    return this.sb.post(`/lsp/${seg(lspId)}/open`, { path, content });
  }

  completion(lspId: string, path: string, line: number, character: number): Promise<LSPCompletionResult> {
    return this.sb.post(`/lsp/${seg(lspId)}/completion`, { path, line, character });
  }

  stop(lspId: string): Promise<LSPStatus> {
    return this.sb.post(`/lsp/${seg(lspId)}/stop`, {});
  }
}

/** The sandbox's hash-chained audit log. */
export class Log {
  constructor(private readonly sb: Sandbox) {}

  /** One page: entries oldest first, with total, limit and offset. */
  page(o: { limit?: number; offset?: number } = {}): Promise<LogPage> {
    return this.sb.t.json("GET", this.sb.path("/log"), { query: o });
  }

  /** Every entry, oldest first, fetched page by page. */
  async *entries(pageSize = 500): AsyncGenerator<LogEntry> {
    let offset = 0;
    for (;;) {
      const page = await this.page({ limit: pageSize, offset });
      const items = page.entries ?? [];
      yield* items;
      offset += items.length;
      if (!items.length || offset >= (page.total ?? 0)) return;
    }
  }

  /**
   * Entries as they are written (GET watch, server-sent events): the newest
   * 100 first, or those after lastEventId. A broken stream is reopened with
   * Last-Event-ID, so no entry is missed or repeated. Runs until the caller
   * stops iterating (break) or signal aborts.
   */
  async *follow(o: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<LogEntry> {
    let last = o.lastEventId;
    for (let failures = 0; failures <= STREAM_RETRIES; failures++) {
      try {
        const resp = await this.sb.t.raw("GET", this.sb.path("/watch"), {
          headers: { Accept: "text/event-stream", ...(last ? { "Last-Event-ID": last } : {}) },
          streamTypes: SSE_TYPES,
          signal: o.signal,
        });
        for await (const ev of sse(resp.body)) {
          if (ev.id) last = ev.id;
          failures = 0;
          yield JSON.parse(ev.data) as LogEntry;
        }
      } catch (e) {
        if (o.signal?.aborted) return;
        if (e instanceof BoxkiteError && e.code !== CODE_CONNECTION) throw e;
      }
      await sleep(STREAM_PAUSE_MS * (failures + 1));
    }
    throw new BoxkiteError({
      code: CODE_CONNECTION,
      message: `sandbox ${this.sb.id}: the watch stream keeps breaking`,
      hint: "check the server; follow({lastEventId}) resumes where this stopped",
    });
  }
}

/** A sandbox's record as a handle holds it: all of it once fetched, the id alone for a bound handle. */
export type SandboxData = SandboxRecord | { id: string };

/** One sandbox. `id` names it; `data` is its record as last fetched (the id alone for `bind()`, until `refresh()`). */
export class Sandbox {
  readonly id: string;
  data: SandboxData;
  readonly files = new Files(this);
  readonly processes = new Processes(this);
  readonly interpreter = new Interpreter(this);
  readonly nodeInterpreter = new Interpreter(this, "/node-interpreter");
  readonly browser = new Browser(this);
  readonly previews = new Previews(this);
  readonly lsp = new LSP(this);
  readonly log = new Log(this);
  readonly storage = new Storage(this);

  /** @internal */
  constructor(
    readonly t: Transport,
    data: SandboxData,
  ) {
    this.data = data;
    this.id = data.id;
  }

  /** @internal */
  path(sub: string): string {
    return `/v1/sandboxes/${seg(this.id)}${sub}`;
  }

  /** @internal */
  post<T>(sub: string, body: Record<string, unknown>, timeoutMs?: number): Promise<T> {
    return this.t.json("POST", this.path(sub), { json: body, timeoutMs });
  }

  get status(): string | undefined {
    return "status" in this.data ? this.data.status : undefined;
  }

  async refresh(): Promise<this> {
    this.data = await this.t.json<SandboxRecord>("GET", this.path(""));
    return this;
  }

  async delete(): Promise<void> {
    await this.t.json("DELETE", this.path(""));
  }

  async extend(lifetimeMinutes: number): Promise<this> {
    this.data = await this.post<SandboxRecord>("/extend", { lifetime_minutes: lifetimeMinutes });
    return this;
  }

  /** Pauses the sandbox (mode "freeze", the default, "filesystem" or "checkpoint"); its lifetime stops counting until resume(). */
  async pause(mode?: "freeze" | "filesystem" | "checkpoint"): Promise<this> {
    this.data = await this.post<SandboxRecord>("/pause", mode ? { mode } : {});
    return this;
  }

  /** Resumes a paused sandbox: same id and endpoints. */
  async resume(): Promise<this> {
    this.data = await this.t.json<SandboxRecord>("POST", this.path("/resume"));
    return this;
  }

  /**
   * Snapshots the sandbox's filesystem, crash-consistent; Boxkite.snapshots
   * lists, restores and deletes snapshots. At most 10 per account by default
   * (429 snapshot_limit_reached).
   */
  snapshot(o: { label?: string; idempotencyKey?: string } = {}): Promise<Snapshot> {
    return this.t.json("POST", this.path("/snapshots"), {
      json: o.label ? { label: o.label } : {},
      idempotencyKey: o.idempotencyKey ?? newIdempotencyKey(),
    });
  }

  /** The sandbox's snapshots, newest first. */
  async snapshots(): Promise<Snapshot[]> {
    return (await this.t.json<Snapshot[] | undefined>("GET", this.path("/snapshots"))) ?? [];
  }

  /** Forks the sandbox count ways: each child starts from its files as they are now. */
  async fork(count = 1, o: { idempotencyKey?: string } = {}): Promise<Sandbox[]> {
    const data = await this.t.json<SandboxRecord[]>("POST", this.path("/fork"), {
      json: { count },
      idempotencyKey: o.idempotencyKey ?? newIdempotencyKey(),
    });
    return (data ?? []).map((d) => new Sandbox(this.t, d));
  }

  stats(): Promise<SandboxStats> {
    return this.t.json("GET", this.path("/stats"));
  }

  /** A single-use token for the sandbox's terminal (admin keys). */
  takeoverToken(readOnly = false): Promise<TakeoverToken> {
    return this.post("/takeover-token", readOnly ? { read_only: true } : {});
  }

  /**
   * The control plane makes an HTTP request for the sandbox, each
   * {{secret:NAME}} in url, headers or body replaced by that secret's value,
   * only to the secret's allowed hosts; echoes of a value in the answer are
   * redacted.
   */
  httpRequest(req: HTTPRequest): Promise<HTTPResponse> {
    return this.post("/http-request", { ...req }, (req.timeout ?? 15) * 1000 + EXEC_MARGIN_MS);
  }

  /**
   * Runs one command (split into words, no shell) on a terminal of its own,
   * typing input_bytes (base64) into it; exit_code is null when it timed out.
   */
  ptyExec(req: PTYExecRequest): Promise<PTYExecResult> {
    return this.post("/pty-exec", { ...req }, Math.min(req.timeout_seconds ?? 30, 120) * 1000 + EXEC_MARGIN_MS);
  }

  /**
   * A takeover's asciicast v2 recording (servers started with takeover
   * recording on); a takeover_end audit entry's detail names it. Works
   * after the sandbox is gone.
   */
  async takeoverRecording(recordingId: string): Promise<Uint8Array> {
    const resp = await this.t.raw("GET", this.path(`/takeover-recordings/${seg(recordingId)}`));
    return new Uint8Array(await resp.arrayBuffer());
  }

  /** Runs a shell command; returns exit_code, stdout, stderr, duration_ms. */
  exec(command: string, o: ExecOptions = {}): Promise<ExecResult> {
    return this.t.json("POST", this.path("/exec"), {
      json: execBody(command, o),
      timeoutMs: (o.timeout ?? DEFAULT_EXEC_TIMEOUT_S) * 1000 + EXEC_MARGIN_MS,
      signal: o.signal,
    });
  }

  /** Runs a shell command and streams its output as it happens. */
  async execStream(command: string, o: ExecOptions = {}): Promise<ExecStream> {
    const resp = await this.t.raw("POST", this.path("/exec"), {
      json: execBody(command, o),
      headers: { Accept: "application/x-ndjson" },
      streamTypes: NDJSON_TYPES,
      timeoutMs: (o.timeout ?? DEFAULT_EXEC_TIMEOUT_S) * 1000 + EXEC_MARGIN_MS,
      signal: o.signal,
    });
    return new ExecStream(ndjson<ExecEvent>(resp.body), resp.headers.get("X-Exec-Id") ?? "", this);
  }

  /**
   * Sends signal to the process group of the streamed exec execId
   * ({@link ExecStream.execId}) while it runs; {@link ExecStream.signal}
   * is the same. A command that ended is a `not_found` BoxkiteError.
   */
  signalExec(execId: string, signal: ExecSignal = "SIGINT"): Promise<ExecSignalResult> {
    return this.post(`/exec/${seg(execId)}/signal`, { signal });
  }
}
