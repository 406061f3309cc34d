/**
 * The API's types, named. Most come from src/openapi.ts, generated from the
 * server's /openapi.json; ExecEvent and CommandRule, JSON unions the
 * document describes loosely, are written here.
 */
import type { components } from "./openapi.js";

type S = components["schemas"];

export type Account = S["Account"];
export type AccountUpdate = S["AccountUpdate"];
export type APIKey = S["APIKey"];
export type APIKeyCreated = S["APIKeyCreated"];
export type ArchiveResult = S["ArchiveResult"];
export type BrowserCloseResult = S["BrowserCloseResult"];
export type BrowserExecRequest = S["BrowserExecRequest"];
export type BrowserExecResult = S["BrowserExecResult"];
export type BrowserNavigateRequest = S["BrowserNavigateRequest"];
export type BrowserNavigateResult = S["BrowserNavigateResult"];
export type BrowserScreenshotRequest = S["BrowserScreenshotRequest"];
export type BrowserScreenshotResult = S["BrowserScreenshotResult"];
export type CreatePreviewRequest = S["CreatePreviewRequest"];
export type CreateSandboxRequest = S["CreateSandboxRequest"];
export type ExecRequest = S["ExecRequest"];
export type ExecResult = S["ExecResult"];
export type ExecSignalResult = S["ExecSignalResult"];
/** The signals ExecStream.signal sends a streamed exec's process group. */
export type ExecSignal = "SIGINT" | "SIGTERM" | "SIGHUP" | "SIGKILL";
export type FileCreateResult = S["FileCreateResult"];
export type FileWriteResult = S["FileWriteResult"];
export type GlobResult = S["GlobResult"];
export type GrepResult = S["GrepResult"];
export type Health = S["Health"];
export type HostStatus = S["HostStatus"];
export type HTTPRequest = S["HTTPRequest"];
export type HTTPResponse = S["HTTPResponse"];
export type Image = S["Image"];
export type CreateImageRequest = S["CreateImageRequest"];
export type ImageSpec = S["ImageSpec"];
export type InterpreterExecResult = S["InterpreterExecResult"];
export type InterpreterReset = S["InterpreterReset"];
export type InterpreterStatus = S["InterpreterStatus"];
export type KillAllResult = S["KillAllResult"];
export type LogEntry = S["LogEntry"];
export type LogPage = S["LogPage"];
export type LsEntry = S["LsEntry"];
export type LSPCompletionResult = S["LSPCompletionResult"];
export type LSPStarted = S["LSPStarted"];
export type LSPStatus = S["LSPStatus"];
export type MCPConnection = S["MCPConnection"];
export type Preview = S["Preview"];
export type PresentFilesResult = S["PresentFilesResult"];
export type PTYExecRequest = S["PTYExecRequest"];
export type PTYExecResult = S["PTYExecResult"];
export type ProcessEvent = S["ProcessEvent"];
export type ProcessInfo = S["ProcessInfo"];
export type ProcessInputResult = S["ProcessInputResult"];
export type ProcessOutput = S["ProcessOutput"];
export type ProcessStarted = S["ProcessStarted"];
export type ProcessStartRequest = S["ProcessStartRequest"];
export type ProcessStopResult = S["ProcessStopResult"];
export type SandboxRecord = S["Sandbox"];
export type ResumeResult = S["ResumeResult"];
export type SandboxStats = S["SandboxStats"];
export type Secret = S["Secret"];
export type CreateSecretRequest = S["CreateSecretRequest"];
export type UpdateSecretRequest = S["UpdateSecretRequest"];
export type Snapshot = S["Snapshot"];
export type SSHKey = S["SSHKey"];
export type StoredFile = S["StoredFile"];
export type StoredFiles = S["StoredFiles"];
export type StrReplaceResult = S["StrReplaceResult"];
export type SyncStatus = S["SyncStatus"];
export type TakeoverToken = S["TakeoverToken"];
export type TokenResponse = S["TokenResponse"];
export type Usage = S["Usage"];
export type ViewResult = S["ViewResult"];
export type Volume = S["Volume"];
export type WatchResult = S["WatchResult"];
export type Webhook = S["Webhook"];
export type CreateWebhookRequest = S["CreateWebhookRequest"];
export type WebhookDelivery = S["WebhookDelivery"];

/** One event of a streamed exec (Accept: application/x-ndjson). */
export type ExecEvent =
  | { type: "stdout" | "stderr"; data: string }
  | {
      type: "exit";
      exit_code: number;
      duration_ms: number;
      truncated?: boolean;
      stdout_bytes?: number;
      stderr_bytes?: number;
      output_limit_bytes?: number;
      stop_reason?: "timeout" | "output_limit" | "memory_limit";
    }
  | { type: "error"; error: { code: string; message: string; hint?: string; request_id?: string } };

/** A command allowlist rule: a program name, or a program with argument rules. */
export type CommandRule = string | { command: string; args_allow?: string[]; args_deny?: string[] };
