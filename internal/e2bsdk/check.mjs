// Helpers of the SDK scripts (flows.mjs, pause.mjs): each check prints
// "ok <name>", and the first failure throws.
export function check(name, cond, detail) {
  if (!cond) throw new Error(`check ${name} failed: ${JSON.stringify(detail)}`)
  console.log(`ok ${name}`)
}

// rejects is the error fn throws, or null.
export async function rejects(fn) {
  try {
    await fn()
  } catch (e) {
    return e
  }
  return null
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// until polls fn until it is true, for at most ms.
export async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms
  for (;;) {
    if (await fn()) return
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}
