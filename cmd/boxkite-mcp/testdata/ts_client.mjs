// The official TypeScript MCP SDK client against boxkite (issue 8,
// acceptance 2). Run by TestRealServer:
//
//   node ts_client.mjs stdio <command> [args...]   (env passes through)
//   node ts_client.mjs http <url>                   (BOXKITE_API_KEY sent as Bearer)
//
// It lists the tools, then runs create_sandbox, exec, file_create, view,
// grep and destroy_sandbox, and prints one JSON object: the tool names and
// each call's arguments, text and isError. The Go test checks them.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.BOXKITE_API_KEY}` } },
  });
} else {
  console.error(`usage: ts_client.mjs stdio|http ...`);
  process.exit(2);
}

const client = new Client({ name: "boxkite-ts-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: [], calls: [] };
const { tools } = await client.listTools();
out.tools = tools.map((t) => t.name);

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  out.calls.push({ name, args, text, isError: res.isError === true });
  return text;
}

try {
  const created = await call("create_sandbox", { label: "ts-sdk" });
  const m = /^Created sandbox (\S+) /.exec(created);
  if (m) {
    const session_id = m[1];
    await call("exec", { session_id, command: "echo hello from $((6*7))" });
    await call("file_create", { session_id, path: "notes/todo.txt", content: "alpha\nneedle here\nomega\n" });
    await call("view", { session_id, path: "notes/todo.txt", view_range: [2, 3] });
    await call("grep", { session_id, pattern: "need+le", path: "notes" });
    await call("destroy_sandbox", { session_id });
  }
} finally {
  await client.close();
}
console.log(JSON.stringify(out));
