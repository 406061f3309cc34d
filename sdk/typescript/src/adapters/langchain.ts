/**
 * Boxkite's agent tools for LangChain.js (`@langchain/core`):
 *
 * ```ts
 * import { boxkiteTools } from "boxkite/langchain";
 * const model = chatModel.bindTools(boxkiteTools(sandbox));
 * ```
 */
import { type StructuredToolInterface, tool } from "@langchain/core/tools";
import type { Sandbox } from "../sandbox.js";
import { type ToolName, runTool, toolDefinitions } from "../tools.js";

/** The tools (all by default) as LangChain structured tools whose calls run in sandbox. */
export function boxkiteTools(sandbox: Sandbox, o: { names?: ToolName[] } = {}): StructuredToolInterface[] {
  return toolDefinitions(o.names).map(
    (d) =>
      tool(async (input: Record<string, unknown>) => runTool(sandbox, d.name, input), {
        name: d.name,
        description: d.description,
        schema: d.parameters as Record<string, unknown> & { type: "object" },
      }) as StructuredToolInterface,
  );
}
