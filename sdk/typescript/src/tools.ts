/**
 * Agent tools over a sandbox. The definitions (names, descriptions, JSON
 * Schemas) are those of boxkite's own agent tools (`boxkite tools export`),
 * generated into tooldefs.ts. toOpenAITools and toAnthropicTools render
 * them for those APIs; runTool runs a call and returns the text for the
 * model. API refusals come back as text an agent can act on
 * (`Error [code]: …` / `Hint: …`), never as exceptions.
 */

import { BoxkiteError } from "./errors.js";
import type { Sandbox } from "./sandbox.js";
import { TOOL_DEFINITIONS } from "./tooldefs.js";
import type { ExecResult } from "./types.js";

export { TOOL_DEFINITIONS };

export type ToolName = (typeof TOOL_DEFINITIONS)[number]["name"];
export type JSONSchema = Record<string, unknown>;

export interface ToolDefinition {
  name: ToolName;
  description: string;
  parameters: JSONSchema;
}

export const TOOL_NAMES: ToolName[] = TOOL_DEFINITIONS.map((d) => d.name);

/** The definitions of names (all by default). */
export function toolDefinitions(names?: ToolName[]): ToolDefinition[] {
  const unknown = (names ?? []).filter((n) => !TOOL_NAMES.includes(n));
  if (unknown.length) throw new Error(`unknown tools ${unknown.join(", ")}; known: ${TOOL_NAMES.join(", ")}`);
  return TOOL_DEFINITIONS.filter((d) => !names || names.includes(d.name)).map((d) => ({
    name: d.name,
    description: d.description,
    parameters: JSON.parse(JSON.stringify(d.parameters)) as JSONSchema,
  }));
}

/**
 * The tools for OpenAI: "chat" gives Chat Completions'
 * `{type: "function", function: {name, description, parameters}}`;
 * "responses" gives the Responses API's flat `{type: "function", name, description, parameters, strict}`.
 */
export function toOpenAITools(names?: ToolName[], api: "chat" | "responses" = "chat"): Record<string, unknown>[] {
  return toolDefinitions(names).map((d) =>
    api === "responses"
      ? { type: "function", name: d.name, description: d.description, parameters: d.parameters, strict: false }
      : { type: "function", function: { name: d.name, description: d.description, parameters: d.parameters } },
  );
}

/** The tools for Anthropic's Messages API: `{name, description, input_schema}`. */
export function toAnthropicTools(names?: ToolName[]): Record<string, unknown>[] {
  return toolDefinitions(names).map((d) => ({ name: d.name, description: d.description, input_schema: d.parameters }));
}

function combine(stdout = "", stderr = ""): string {
  const out = stdout.replace(/\n+$/, "");
  const err = stderr.replace(/\n+$/, "");
  return err ? (out ? `${out}\n${err}` : err) : out;
}

// Without it, output cut at the server's cap reads like the command's end.
function truncatedNote(res: ExecResult): string {
  if (!res.truncated) return "";
  return (
    `\n\n(output truncated: the command wrote ${res.stdout_bytes ?? 0} bytes to stdout and ${res.stderr_bytes ?? 0} to stderr; ` +
    `only the first ${res.output_limit_bytes ?? 0} bytes of each are shown. Redirect the output to a file and read it with view or grep.)`
  );
}

function execText(res: ExecResult): string {
  const out = combine(res.stdout, res.stderr);
  if (!res.exit_code) {
    if (!out && !res.truncated) return "(command completed with no output)";
    return out + truncatedNote(res);
  }
  return `Error (exit code ${res.exit_code}):\n${out || "(no output)"}` + truncatedNote(res);
}

async function viewText(sb: Sandbox, path: string, startArg: unknown, endArg: unknown): Promise<string> {
  const start = Math.max(Number(startArg ?? 1) || 1, 1);
  let end = endArg === undefined || endArg === null ? start + 99 : Number(endArg);
  if (end < -1 || end === 0) end = -1;
  if (end !== -1 && end < start) return `Error: end_line ${end} is before start_line ${start}`;
  const res = await sb.files.view(path, [start, end]);
  if (res.is_directory) {
    const entries = res.entries ?? [];
    return `Directory: ${path}\n\n${entries.length ? entries.join("\n") : "(empty)"}`;
  }
  const lines = res.lines ?? 0;
  if (lines === 0) return `File is empty: ${path}`;
  if (start > lines) return `Error: start_line ${start} is past the end of ${path} (${lines} lines)`;
  const last = end === -1 || end > lines ? lines : end;
  const body = [`File: ${path} (lines ${start}-${last} of ${lines})`];
  (res.content ?? "").split("\n").forEach((line, i) => body.push(`${String(start + i).padStart(6)}\t${line}`));
  return body.join("\n");
}

/** Runs tool call name with args (an object or its JSON text) in sb; returns the text for the model. */
export async function runTool(sb: Sandbox, name: string, args: unknown): Promise<string> {
  let a: Record<string, unknown>;
  try {
    a = (typeof args === "string" ? JSON.parse(args) : (args ?? {})) as Record<string, unknown>;
  } catch (e) {
    return `Error: the arguments of ${name} are not JSON: ${(e as Error).message}`;
  }
  const str = (k: string) => (typeof a[k] === "string" ? (a[k] as string) : "");
  try {
    switch (name) {
      case "bash_tool": {
        const command = str("command");
        if (!command.trim()) return "Error: command must not be empty";
        const timeout = a.timeout ?? 120;
        if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 1 || timeout > 600) {
          // As the REST API and boxkite's Go tools: refused, not clamped.
          return `Error: timeout must be between 1 and 600 seconds, got ${JSON.stringify(timeout)}\nHint: omit timeout for the default of 120 seconds.`;
        }
        return execText(await sb.exec(command, { timeout }));
      }
      case "file_create": {
        const path = str("path");
        if (!path.trim()) return "Error: path must not be empty";
        const res = await sb.files.write(path, str("content"));
        return `Created file: ${res.path || path} (${res.size ?? 0} bytes)`;
      }
      case "view": {
        const path = str("path");
        if (!path.trim()) return "Error: path must not be empty";
        return await viewText(sb, path, a.start_line, a.end_line);
      }
      case "str_replace": {
        const path = str("path");
        if (!path.trim()) return "Error: path must not be empty";
        if (!str("old_str")) return "Error: old_str must not be empty";
        const res = await sb.files.strReplace(path, str("old_str"), str("new_str"));
        const p = res.path || path;
        const n = res.occurrences ?? 0;
        if (!res.replaced || n === 0) {
          return `Error: old_str not found in ${p}\nHint: view the file and copy the exact text, including whitespace and indentation.`;
        }
        return `Replaced ${n} occurrence${n === 1 ? "" : "s"} in ${p}`;
      }
    }
  } catch (e) {
    // As boxkite's own tools: the refusal's stable code in brackets.
    if (e instanceof BoxkiteError) return `Error${e.code ? ` [${e.code}]` : ""}: ${e.apiMessage}${e.hint ? `\nHint: ${e.hint}` : ""}`;
    throw e;
  }
  return `Error: unknown tool ${JSON.stringify(name)}; known: ${TOOL_NAMES.join(", ")}`;
}
