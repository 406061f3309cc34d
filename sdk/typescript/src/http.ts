/**
 * The HTTP transport over `fetch`: the error envelope, retries on 429/503
 * after Retry-After, timeouts, and the server version check.
 */

import { BoxkiteError, CODE_BAD_RESPONSE, CODE_CONNECTION, CODE_SERVER_TOO_OLD, CODE_TIMEOUT, codeForStatus } from "./errors.js";
import { MIN_SERVER_VERSION, VERSION, tooOld } from "./version.js";

/**
 * The 503 codes retried: the server cannot take the request now but will.
 * Others (secrets_unavailable: the server has no secrets key) would get
 * the same answer again. bad_response: a proxy's 503 page, its backend
 * away for now.
 */
const RETRY_503_CODES = new Set(["service_unavailable", "host_capacity", "audit_unavailable", "sidecar_not_configured", "bad_response"]);

/**
 * Whether a refusal is worth sending again: a 429 rate_limited (not a
 * fair-use limit such as concurrent_sandbox_limit_reached), a 503 of
 * RETRY_503_CODES, or either with Retry-After; never an answer whose
 * details say performed: true (done, only its audit entry is pending).
 */
export function retryable(err: BoxkiteError): boolean {
  const d = err.details as { performed?: unknown } | undefined;
  if (d?.performed === true) return false;
  if (err.status === 429) return err.code === "rate_limited" || err.retryAfter !== undefined;
  if (err.status === 503) return RETRY_503_CODES.has(err.code) || err.retryAfter !== undefined;
  return false;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

/** A request body: JSON goes through `json`; bytes or a stream through `body`. */
export type Body = Uint8Array | ArrayBuffer | Blob | string | ReadableStream<Uint8Array>;

export interface RequestOptions {
  json?: unknown;
  body?: Body;
  query?: Query;
  headers?: Record<string, string>;
  /** Milliseconds until the answer's headers must have arrived; 0 for none. */
  timeoutMs?: number;
  idempotencyKey?: string;
  /** A credential other than the client's; "" sends none. */
  auth?: string;
  signal?: AbortSignal;
  /**
   * The media types a streamed answer comes as: a 2xx answer of another
   * type (a static site's page, another server's "200 OK" text) is
   * bad_response, not a stream reader's parse error.
   */
  streamTypes?: readonly string[];
}

/** The media types of the API's streams, for RequestOptions.streamTypes. */
export const NDJSON_TYPES = ["application/x-ndjson", "application/json"] as const; // a server that does not stream answers JSON
export const SSE_TYPES = ["text/event-stream"] as const;
export const TEXT_TYPES = ["text/plain"] as const; // an image's build log

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs?: number;
  maxRetries?: number;
  maxRetryWaitMs?: number;
  userAgent?: string;
  fetch?: typeof fetch;
}

/** Milliseconds to wait from a Retry-After header (seconds or an HTTP date). */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const when = Date.parse(v);
  return Number.isNaN(when) ? undefined : Math.max(0, when - Date.now());
}

/** The hint of a bad_response error: the answer was not boxkite's. */
export const BAD_RESPONSE_HINT = "check the base URL (BOXKITE_BASE_URL / baseUrl) and any proxy in between";

/** Web pages: what a proxy, a login page or a static site answers, never boxkite. */
const HTML_TYPES = new Set(["text/html", "application/xhtml+xml"]);

/** The Content-Type without its parameters, lower case. */
function mediaType(headers: Headers): string {
  return (headers.get("Content-Type") ?? "").split(";")[0].trim().toLowerCase();
}

/**
 * The error of an answer that is not boxkite's: its status and content
 * type, never its body (a proxy's page says nothing useful).
 */
function badResponse(baseUrl: string, resp: Response): BoxkiteError {
  const retry = parseRetryAfter(resp.headers.get("Retry-After"));
  return new BoxkiteError({
    code: CODE_BAD_RESPONSE,
    message: `the server at ${baseUrl} answered ${resp.status} ${mediaType(resp.headers) || "without a Content-Type"}, not boxkite's JSON`,
    hint: BAD_RESPONSE_HINT,
    request_id: resp.headers.get("X-Request-ID") ?? "",
    status: resp.status,
    retryAfter: retry === undefined ? undefined : retry / 1000,
  });
}

/**
 * The BoxkiteError of a non-2xx answer. A body that is neither the
 * envelope nor JSON (a proxy's HTML page, another web server) is
 * bad_response: the server at baseUrl is not boxkite.
 */
export async function errorFrom(resp: Response, baseUrl = ""): Promise<BoxkiteError> {
  const text = await resp.text().catch(() => "");
  let env: Record<string, unknown> = {};
  try {
    const doc = JSON.parse(text) as { error?: Record<string, unknown> };
    if (doc && typeof doc.error === "object" && doc.error) env = doc.error;
  } catch {
    // not the envelope: use the status
  }
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const retry = parseRetryAfter(resp.headers.get("Retry-After"));
  const media = mediaType(resp.headers);
  if (Object.keys(env).length === 0 && text.trim() && media !== "application/json" && !media.endsWith("+json")) {
    return badResponse(baseUrl, resp);
  }
  return new BoxkiteError({
    code: str(env.code) || codeForStatus(resp.status),
    message: str(env.message) || text.trim().slice(0, 500) || `HTTP ${resp.status}`,
    hint: str(env.hint),
    details: env.details,
    request_id: str(env.request_id) || resp.headers.get("X-Request-ID") || "",
    status: resp.status,
    retryAfter: retry === undefined ? undefined : retry / 1000,
  });
}

function versionError(version: string): BoxkiteError {
  return new BoxkiteError({
    code: CODE_SERVER_TOO_OLD,
    message: `boxkite-server ${version} is older than ${MIN_SERVER_VERSION}, the oldest this SDK (${VERSION}) supports`,
    hint: `upgrade boxkite-server to ${MIN_SERVER_VERSION} or later, or install an SDK release that matches the server`,
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends requests to one boxkite control plane. */
export class Transport {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly maxRetryWaitMs: number;
  readonly userAgent: string;
  /** The Boxkite-Version the server last sent. */
  serverVersion?: string;
  private readonly fetchImpl: typeof fetch;

  constructor(o: TransportOptions) {
    let u: URL;
    try {
      u = new URL(o.baseUrl);
    } catch {
      u = new URL("invalid:");
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new BoxkiteError({
        code: "bad_request",
        message: `base URL ${JSON.stringify(o.baseUrl)} is not an http(s) URL`,
        hint: "pass baseUrl like http://127.0.0.1:8090 or set BOXKITE_BASE_URL",
      });
    }
    this.baseUrl = o.baseUrl.replace(/\/+$/, "");
    this.apiKey = o.apiKey;
    this.timeoutMs = o.timeoutMs ?? 120_000;
    this.maxRetries = o.maxRetries ?? 3;
    this.maxRetryWaitMs = o.maxRetryWaitMs ?? 60_000;
    this.userAgent = o.userAgent ?? `boxkite-typescript/${VERSION}`;
    this.fetchImpl = o.fetch ?? globalThis.fetch.bind(globalThis);
  }

  private backoff(attempt: number, retryAfterMs?: number): number {
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, this.maxRetryWaitMs);
    return Math.min(500 * 2 ** attempt * (0.5 + Math.random()), this.maxRetryWaitMs, 8000);
  }

  url(path: string, query?: Query): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) q.set(k, String(v));
    }
    const qs = q.toString();
    return this.baseUrl + path + (qs ? `?${qs}` : "");
  }

  /** Sends a request and returns the 2xx answer unread; throws BoxkiteError otherwise. */
  async raw(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { "User-Agent": this.userAgent, Accept: "application/json" };
    const token = o.auth ?? this.apiKey;
    if (token) headers.Authorization = `Bearer ${token}`;
    let body: Body | undefined = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers["Content-Type"] = "application/json";
    }
    if (o.idempotencyKey) headers["Idempotency-Key"] = o.idempotencyKey;
    Object.assign(headers, o.headers);
    const streamed = typeof ReadableStream !== "undefined" && body instanceof ReadableStream;
    const url = this.url(path, o.query);
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const ctl = new AbortController();
      const timer = timeoutMs > 0 ? setTimeout(() => ctl.abort(new Error("timeout")), timeoutMs) : undefined;
      const onAbort = () => ctl.abort(o.signal?.reason);
      o.signal?.addEventListener("abort", onAbort, { once: true });
      let resp: Response;
      try {
        const init: RequestInit & { duplex?: string } = { method, headers, body: body as BodyInit | undefined, signal: ctl.signal };
        if (streamed) init.duplex = "half";
        resp = await this.fetchImpl(url, init);
      } catch (e) {
        if (o.signal?.aborted) throw e;
        if (ctl.signal.aborted) {
          throw new BoxkiteError({
            code: CODE_TIMEOUT,
            message: `${method} ${path}: no answer within ${timeoutMs / 1000} s`,
            hint: "pass a larger timeoutMs to the call or the client",
          });
        }
        const refused = String((e as { cause?: { code?: string } }).cause?.code ?? "") === "ECONNREFUSED";
        if (refused && !streamed && attempt < this.maxRetries) {
          await sleep(this.backoff(attempt));
          continue;
        }
        throw new BoxkiteError({
          code: CODE_CONNECTION,
          message: `cannot reach the boxkite server at ${this.baseUrl}: ${(e as Error).message}${refused ? " (connection refused)" : ""}`,
          hint: "start it with `boxkite up`, or check BOXKITE_BASE_URL",
        });
      } finally {
        clearTimeout(timer);
        o.signal?.removeEventListener("abort", onAbort);
      }
      const version = resp.headers.get("Boxkite-Version");
      if (version) this.serverVersion = version;
      if (tooOld(version)) {
        await resp.body?.cancel().catch(() => undefined);
        throw versionError(version!);
      }
      if (resp.ok) {
        const media = mediaType(resp.headers);
        // A web page (a static site answers 200 to every path) is no file
        // or stream of boxkite's, which sends files as octet-stream.
        if (HTML_TYPES.has(media) || (o.streamTypes && !o.streamTypes.includes(media))) {
          await resp.body?.cancel().catch(() => undefined);
          throw badResponse(this.baseUrl, resp);
        }
        return resp;
      }
      const err = await errorFrom(resp, this.baseUrl);
      if (retryable(err) && !streamed && attempt < this.maxRetries) {
        await sleep(this.backoff(attempt, err.retryAfter === undefined ? undefined : err.retryAfter * 1000));
        continue;
      }
      throw err;
    }
  }

  /** Sends a request and decodes its JSON answer (undefined when empty). */
  async json<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    return (await this.jsonWithHeaders<T>(method, path, o)).data;
  }

  /** json, with the answer's headers (a list's Link). */
  async jsonWithHeaders<T>(method: string, path: string, o: RequestOptions = {}): Promise<{ data: T; headers: Headers }> {
    const resp = await this.raw(method, path, o);
    const text = await resp.text();
    const media = mediaType(resp.headers);
    // A web page (a static site at the base URL answers 200 to every
    // path): no route of boxkite answers one.
    if (HTML_TYPES.has(media)) throw badResponse(this.baseUrl, resp);
    if (!text) return { data: undefined as T, headers: resp.headers };
    try {
      return { data: JSON.parse(text) as T, headers: resp.headers };
    } catch (e) {
      if (media !== "application/json" && !media.endsWith("+json")) throw badResponse(this.baseUrl, resp);
      throw new BoxkiteError({
        code: CODE_BAD_RESPONSE,
        message: `${method} ${path}: the answer is not JSON: ${(e as Error).message}`,
        status: resp.status,
      });
    }
  }
}

/**
 * The cursor query parameter of the rel="next" Link (RFC 8288) of a list's
 * answer; undefined on the last page.
 */
export function nextCursor(headers: Headers): string | undefined {
  const link = headers.get("Link") ?? "";
  for (const m of link.matchAll(/<([^>]*)>\s*((?:;[^;,]*)*)/g)) {
    const next = m[2].split(";").some((p) => {
      const [name, val = ""] = p.trim().split("=", 2);
      return name.trim().toLowerCase() === "rel" && val.trim().replace(/^"|"$/g, "").toLowerCase().split(/\s+/).includes("next");
    });
    if (next) return new URL(m[1], "http://x").searchParams.get("cursor") ?? undefined;
  }
  return undefined;
}

/** A fresh Idempotency-Key: a create retried after a lost answer runs once. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/** One path segment, escaped. */
export const seg = (s: string) => encodeURIComponent(s);
