/**
 * Boxkite's agent tools for the Vercel AI SDK (`ai`, version 5 or later):
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { boxkiteTools } from "boxkite/ai";
 * const { text } = await generateText({ model, tools: boxkiteTools(sandbox), stopWhen: stepCountIs(5), prompt });
 * ```
 */
import { jsonSchema, tool, type ToolSet } from "ai";
import type { Sandbox } from "../sandbox.js";
import { type ToolName, runTool, toolDefinitions } from "../tools.js";

/** The tools (all by default) as an AI SDK ToolSet whose calls run in sandbox. */
export function boxkiteTools(sandbox: Sandbox, o: { names?: ToolName[] } = {}): ToolSet {
  const out: ToolSet = {};
  for (const d of toolDefinitions(o.names)) {
    out[d.name] = tool({
      description: d.description,
      inputSchema: jsonSchema<Record<string, unknown>>(d.parameters as Parameters<typeof jsonSchema>[0]),
      execute: (input: Record<string, unknown>) => runTool(sandbox, d.name, input),
    });
  }
  return out;
}
