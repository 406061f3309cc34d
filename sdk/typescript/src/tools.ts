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

// A hint of the API's names boxkite CLI commands, which an agent calling
// these tools cannot run. As boxkite's Go tools (tools/hints.go) do for the
// tools an agent has: a command one of them does the same as becomes that
// tool, and an aside or a "; "-separated clause that still names a command
// is left out (the hint too, when nothing of it is left).
const CLI_COMMAND = /[`'(]boxkite [a-z]/;
const CLI_ASIDE = / ?\([^()]*[`'(]boxkite [a-z][^()]*\)/g;
const AS_TOOL: [RegExp, string][] = [
  [/raise the limit \(boxkite doctor says how\)/g, "ask the server's operator to raise the limit"],
  [/[`']boxkite files view PATH[`']/g, "`view`"],
];

const namesCommand = (s: string) => CLI_COMMAND.test(s) || s.includes("boxkite doctor");

function agentHint(code: string, hint: string): string {
  if (code === "bad_response" || !namesCommand(hint)) return hint;
  for (const [cli, tool] of AS_TOOL) hint = hint.replace(cli, tool);
  if (!namesCommand(hint)) return hint;
  return hint
    .replace(CLI_ASIDE, "")
    .split("; ")
    .filter((c) => !namesCommand(c))
    .join("; ")
    .trim();
}

/**
 * The text telling the agent what is wrong with args for tool name, or ""
 * when they fit its schema, in the words of boxkite's Go tools (and so of
 * the MCP servers): an object, no unknown parameter, every required one
 * present and not null. (A model that writes file_create's content as
 * file_text, as Anthropic's own editor tool names it, is told so instead
 * of getting an empty file.)
 */
function checkArgs(name: string, args: unknown): string {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return `Error: the arguments of ${name} must be a JSON object`;
  const def = TOOL_DEFINITIONS.find((d) => d.name === name);
  if (!def) return "";
  const schema = def.parameters as { properties?: Record<string, unknown>; required?: readonly string[]; additionalProperties?: boolean };
  const props = schema.properties ?? {};
  const names = Object.keys(props).sort();
  const a = args as Record<string, unknown>;
  const quote = (ns: readonly string[]) => ns.map((n) => JSON.stringify(n)).join(", ");
  const unknown = Object.keys(a)
    .filter((k) => !Object.hasOwn(props, k))
    .sort();
  if (unknown.length && !schema.additionalProperties) {
    if (!names.length) return `Error: ${name} takes no parameters; got ${quote(unknown)}`;
    return `Error: ${name} has no parameter ${quote(unknown)}; its parameters are ${names.join(", ")}`;
  }
  const missing = (schema.required ?? []).filter((r) => a[r] === undefined || a[r] === null);
  if (missing.length) return `Error: ${name} needs the parameter ${quote(missing)}`;
  return "";
}

/**
 * Runs tool call name with args (an object or its JSON text) in sb; returns
 * the text for the model. Arguments that do not fit the tool's schema (an
 * unknown or a missing parameter) are refused with the text boxkite's MCP
 * servers give, before anything reaches the sandbox.
 */
export async function runTool(sb: Sandbox, name: string, args: unknown): Promise<string> {
  let a: Record<string, unknown>;
  try {
    a = (typeof args === "string" ? JSON.parse(args) : (args ?? {})) as Record<string, unknown>;
  } catch (e) {
    return `Error: the arguments of ${name} are not JSON: ${(e as Error).message}`;
  }
  const refused = checkArgs(name, a ?? {});
  if (refused) return refused;
  a = a ?? {};
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
    if (e instanceof BoxkiteError) {
      const hint = agentHint(e.code, e.hint ?? "");
      return `Error${e.code ? ` [${e.code}]` : ""}: ${e.apiMessage}${hint ? `\nHint: ${hint}` : ""}`;
    }
    throw e;
  }
  return `Error: unknown tool ${JSON.stringify(name)}; known: ${TOOL_NAMES.join(", ")}`;
}
