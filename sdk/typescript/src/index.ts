/**
 * boxkite: the TypeScript client of boxkite, the self-hostable sandbox for
 * agent code execution. ESM, typed, no dependency beyond `fetch`.
 *
 * ```ts
 * import { Boxkite } from "boxkite";
 * const bk = new Boxkite();   // BOXKITE_BASE_URL/BOXKITE_API_KEY, or ~/.boxkite
 * const sb = await bk.sandboxes.create({ label: "demo" });
 * console.log((await sb.exec("echo hi")).stdout);
 * await sb.delete();
 * ```
 *
 * Adapters for agent frameworks: `boxkite/ai` (Vercel AI SDK),
 * `boxkite/langchain` (LangChain.js), `boxkite/openai-agents` (OpenAI Agents SDK).
 */
export { Boxkite, type BoxkiteOptions, Collection, type CreateOptions, type Page, PagedCollection, type SandboxPage, Sandboxes, Volumes, Images, MCPConnections, APIKeys, SSHKeys, Secrets, Snapshots, Account } from "./client.js";
export { BoxkiteError, CODE_BAD_RESPONSE, CODE_CONNECTION, CODE_SERVER_TOO_OLD, CODE_TIMEOUT } from "./errors.js";
export { type Body, Transport } from "./http.js";
export { Browser, ExecStream, type ExecOptions, Files, Interpreter, Log, LSP, Previews, Processes, Sandbox, type SandboxData, Storage } from "./sandbox.js";
export { TOOL_DEFINITIONS, TOOL_NAMES, runTool, toAnthropicTools, toOpenAITools, toolDefinitions, type ToolDefinition, type ToolName } from "./tools.js";
export type * from "./types.js";
export type { components, paths } from "./openapi.js";
export { MIN_SERVER_VERSION, VERSION } from "./version.js";
