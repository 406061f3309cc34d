/** The SDK's version and the oldest server release it works with. */
export const VERSION = "0.1.0";

/**
 * The oldest boxkite-server release whose API this SDK covers. Servers
 * send their version in the Boxkite-Version header; "dev" builds and Go
 * pseudo-versions (v0.0.0-…) are not checked.
 */
export const MIN_SERVER_VERSION = "0.1.0";

/** [major, minor, patch] of a release, or undefined for builds not checked. */
export function versionTuple(v: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(.*)$/.exec(v.trim());
  if (!m) return undefined;
  const t: [number, number, number] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (t[0] === 0 && t[1] === 0 && t[2] === 0 && m[4]) return undefined;
  return t;
}

/** Whether a server version is older than MIN_SERVER_VERSION. */
export function tooOld(version: string | null | undefined): boolean {
  if (!version) return false;
  const have = versionTuple(version);
  const want = versionTuple(MIN_SERVER_VERSION)!;
  if (!have) return false;
  for (let i = 0; i < 3; i++) {
    if (have[i]! !== want[i]!) return have[i]! < want[i]!;
  }
  return false;
}
