/**
 * Boxkite's agent tools for the OpenAI Agents SDK (`@openai/agents`):
 *
 * ```ts
 * import { Agent, run } from "@openai/agents";
 * import { boxkiteTools } from "boxkite/openai-agents";
 * const agent = new Agent({ name: "coder", instructions, tools: boxkiteTools(sandbox) });
 * ```
 */
import { type FunctionTool, tool } from "@openai/agents";
import type { Sandbox } from "../sandbox.js";
import { type ToolName, runTool, toolDefinitions } from "../tools.js";

/** The SDK's type of a non-strict JSON schema; boxkite's schemas are sent as they are. */
type NonStrictSchema = { type: "object"; properties: Record<string, never>; required: never[]; additionalProperties: true };

/** The tools (all by default) as Agents SDK function tools whose calls run in sandbox. */
export function boxkiteTools(sandbox: Sandbox, o: { names?: ToolName[] } = {}): FunctionTool[] {
  return toolDefinitions(o.names).map(
    (d) =>
      tool({
        name: d.name,
        description: d.description,
        // The schemas are boxkite's own (not strict-mode schemas: they have
        // optional fields), so strict is off; the SDK parses the arguments
        // as JSON and runTool checks them.
        parameters: d.parameters as unknown as NonStrictSchema,
        strict: false,
        execute: async (input: unknown) => runTool(sandbox, d.name, input),
      }) as unknown as FunctionTool,
  );
}
