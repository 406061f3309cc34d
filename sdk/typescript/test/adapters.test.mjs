// Acceptance 3 of issue 25: each agent framework's own machinery calls
// boxkite's exec tool, and the command runs in a real sandbox. Needs a
// server (BOXKITE_BASE_URL, BOXKITE_API_KEY): sdk/conformance's
// TestSDKOwnTests starts one and runs this with node --test.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { Agent, Runner, Usage, setTracingDisabled } from "@openai/agents";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { Boxkite, TOOL_DEFINITIONS } from "../dist/index.js";
import { boxkiteTools as aiTools } from "../dist/adapters/ai.js";
import { boxkiteTools as langchainTools } from "../dist/adapters/langchain.js";
import { boxkiteTools as agentsTools } from "../dist/adapters/openai-agents.js";

// The Agents SDK exports traces to OpenAI unless told not to; no test
// reaches another host.
setTracingDisabled(true);

const bashSchema = TOOL_DEFINITIONS.find((d) => d.name === "bash_tool").parameters;
const bk = new Boxkite();
let sb;
before(async () => {
  sb = await bk.sandboxes.create({ label: "adapters" });
});
after(async () => {
  await sb?.delete();
});

const text = async (path) => new TextDecoder().decode(await sb.files.download(path));

test("Vercel AI SDK: generateText with the ai package's mock model runs bash_tool in the sandbox", async () => {
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  const model = new MockLanguageModelV3({
    doGenerate: [
      {
        content: [
          {
            type: "tool-call",
            toolCallId: "call-1",
            toolName: "bash_tool",
            input: JSON.stringify({ command: "echo from-ai > ai.txt && cat ai.txt" }),
          },
        ],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: [],
      },
      { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
    ],
  });
  const result = await generateText({ model, tools: aiTools(sb), stopWhen: stepCountIs(3), prompt: "write ai.txt" });
  assert.equal(result.text, "done");
  assert.equal(result.steps[0].toolResults[0].output, "from-ai");
  assert.equal(await text("ai.txt"), "from-ai\n");
  // The model was offered boxkite's tools with boxkite's schemas.
  const offered = model.doGenerateCalls[0].tools.find((t) => t.name === "bash_tool");
  assert.deepEqual(offered.inputSchema, bashSchema);
  // The second step saw the tool's output.
  const prompt = JSON.stringify(model.doGenerateCalls[1].prompt);
  assert.match(prompt, /from-ai/);
});

test("LangChain.js: a tool call through the structured tool runs in the sandbox", async () => {
  const tools = langchainTools(sb);
  const bash = tools.find((t) => t.name === "bash_tool");
  assert.deepEqual(convertToOpenAITool(bash).function.parameters, bashSchema);
  const msg = await bash.invoke({
    type: "tool_call",
    id: "call-2",
    name: "bash_tool",
    args: { command: "echo from-langchain > lc.txt && cat lc.txt" },
  });
  assert.equal(msg.tool_call_id, "call-2");
  assert.equal(msg.content, "from-langchain");
  assert.equal(await text("lc.txt"), "from-langchain\n");
  // LangChain validates arguments against boxkite's schema before running.
  await assert.rejects(bash.invoke({ timeout: 5 }));
});

test("OpenAI Agents SDK: an agent run with a scripted model calls bash_tool in the sandbox", async () => {
  const responses = [
    {
      usage: new Usage(),
      output: [
        {
          type: "function_call",
          callId: "call-3",
          name: "bash_tool",
          arguments: JSON.stringify({ command: "echo from-agents > agents.txt && cat agents.txt" }),
          status: "completed",
        },
      ],
    },
    {
      usage: new Usage(),
      output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }],
    },
  ];
  const requests = [];
  const model = {
    async getResponse(request) {
      requests.push(request);
      return responses.shift();
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error("not streamed");
    },
  };
  const agent = new Agent({ name: "coder", instructions: "use the tools", model, tools: agentsTools(sb) });
  const result = await new Runner({ tracingDisabled: true }).run(agent, "write agents.txt");
  assert.equal(result.finalOutput, "done");
  assert.equal(await text("agents.txt"), "from-agents\n");
  const offered = requests[0].tools.find((t) => t.name === "bash_tool");
  assert.deepEqual(offered.parameters, bashSchema);
  assert.match(JSON.stringify(requests[1].input), /from-agents/);
});
