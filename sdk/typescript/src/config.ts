/** Where the client finds its server and key when none is passed. */

type NodeProcess = {
  env?: Record<string, string | undefined>;
  getBuiltinModule?: (name: string) => unknown;
};

const proc = (globalThis as { process?: NodeProcess }).process;

const env = (name: string): string | undefined => proc?.env?.[name] || undefined;

type FS = { readFileSync(path: string, enc: "utf8"): string };
type OS = { homedir(): string };

/** base_url and api_key of a TOML file the CLI writes, or {} when unreadable. */
function readConfig(fs: FS, path: string): Record<string, string> {
  try {
    const out: Record<string, string> = {};
    for (const line of fs.readFileSync(path, "utf8").split("\n")) {
      const m = /^\s*(base_url|api_key)\s*=\s*(['"])(.*)\2\s*$/.exec(line);
      if (m) out[m[1]!] = m[3]!;
    }
    return out;
  } catch {
    return {};
  }
}

/**
 * The server URL and API key: the arguments, else BOXKITE_BASE_URL and
 * BOXKITE_API_KEY, else (on Node.js) the CLI's files under BOXKITE_HOME
 * (~/.boxkite): config.toml when it names both, else local.toml, which
 * `boxkite up` writes.
 */
export function resolveConfig(baseUrl?: string, apiKey?: string): { baseUrl: string; apiKey: string } {
  const url = baseUrl || env("BOXKITE_BASE_URL") || "";
  const key = apiKey || env("BOXKITE_API_KEY") || "";
  if (url && key) return { baseUrl: url, apiKey: key };
  let files: Record<string, string> = {};
  const fs = proc?.getBuiltinModule?.("node:fs") as FS | undefined;
  const os = proc?.getBuiltinModule?.("node:os") as OS | undefined;
  if (fs && os) {
    const home = env("BOXKITE_HOME") || `${os.homedir()}/.boxkite`;
    const hosted = readConfig(fs, `${home}/config.toml`);
    files = hosted.base_url && hosted.api_key ? hosted : readConfig(fs, `${home}/local.toml`);
  }
  return { baseUrl: url || files.base_url || "http://127.0.0.1:8090", apiKey: key || files.api_key || "" };
}
