/** Readers of the API's streams: NDJSON lines and server-sent events. */

import { BoxkiteError, CODE_BAD_RESPONSE } from "./errors.js";

/** The lines of a body, without their line ends, until it ends. */
export async function* lines(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string> {
  if (!body) return;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        yield buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
      }
    }
    buf += decoder.decode();
    if (buf) yield buf;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Each JSON line of a streamed answer. */
export async function* ndjson<T>(body: ReadableStream<Uint8Array> | null): AsyncGenerator<T> {
  for await (const line of lines(body)) {
    if (!line.trim()) continue;
    try {
      yield JSON.parse(line) as T;
    } catch (e) {
      throw new BoxkiteError({ code: CODE_BAD_RESPONSE, message: `a stream line is not JSON: ${(e as Error).message}` });
    }
  }
}

export interface ServerSentEvent {
  id?: string;
  data: string;
}

/** Each server-sent event; comments (keep-alives) are skipped. */
export async function* sse(body: ReadableStream<Uint8Array> | null): AsyncGenerator<ServerSentEvent> {
  let id: string | undefined;
  let data: string[] = [];
  for await (const line of lines(body)) {
    if (line === "") {
      if (data.length) yield { id, data: data.join("\n") };
      id = undefined;
      data = [];
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") id = value;
    else if (field === "data") data.push(value);
  }
}

/** The error a stream's {"type":"error"} event carries. */
export function eventError(ev: { error?: { code?: string; message?: string; hint?: string; details?: unknown; request_id?: string } }): BoxkiteError {
  const e = ev.error ?? {};
  const code = e.code || "internal_error";
  return new BoxkiteError({
    code,
    message: e.message || "the stream ended with an error",
    hint: e.hint,
    details: e.details,
    request_id: e.request_id,
    status: code === "sandbox_lost" ? 410 : code === "sandbox_operation_failed" ? 502 : 0,
  });
}
