/**
 * Errors of the boxkite SDK. Every non-2xx answer of the API is one
 * envelope, `{"error": {code, message, hint, details, request_id}}`; the SDK
 * throws it as a {@link BoxkiteError} carrying those fields. `code` is
 * stable: branch on it, never on `message`.
 */

export interface ErrorBody {
  code: string;
  message: string;
  hint?: string;
  details?: unknown;
  request_id?: string;
}

/** An error answer of the API, or one the SDK makes itself (status 0). */
export class BoxkiteError extends Error {
  readonly code: string;
  readonly hint: string;
  readonly status: number;
  readonly details: unknown;
  readonly requestId: string;
  /** Seconds the server asked to wait (Retry-After), when it did. */
  readonly retryAfter?: number;
  /** The API's own message, without code and hint. */
  readonly apiMessage: string;

  constructor(body: ErrorBody & { status?: number; retryAfter?: number }) {
    super(body.hint ? `${body.message} [${body.code}]\nhint: ${body.hint}` : `${body.message} [${body.code}]`);
    this.name = "BoxkiteError";
    this.code = body.code;
    this.hint = body.hint ?? "";
    this.status = body.status ?? 0;
    this.details = body.details;
    this.requestId = body.request_id ?? "";
    this.retryAfter = body.retryAfter;
    this.apiMessage = body.message;
  }

  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.apiMessage,
      hint: this.hint,
      status: this.status,
      details: this.details,
      request_id: this.requestId,
    };
  }
}

/** Codes the SDK uses for errors the API did not send. */
export const CODE_CONNECTION = "connection_error";
export const CODE_TIMEOUT = "timeout";
export const CODE_SERVER_TOO_OLD = "server_too_old";
export const CODE_BAD_RESPONSE = "bad_response";

/** The code a status implies when the body carried no envelope. */
export function codeForStatus(status: number): string {
  const byStatus: Record<number, string> = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    422: "validation_error",
    429: "rate_limited",
    503: "service_unavailable",
  };
  return byStatus[status] ?? (status >= 500 ? "internal_error" : "bad_request");
}
