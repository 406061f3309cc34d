// The E2B SDK against /v1, in one run (BENCHMARKS.md, issue 21 acceptance
// 4): create + first command, and a command's round trip, through
// e2b's Sandbox and through /v1 with fetch, interleaved so that both see
// the same machine. Usage: node bench.mjs [sandboxes] [round trips each].
import { Sandbox } from 'e2b'

const sandboxes = Number(process.argv[2] || 10)
const trips = Number(process.argv[3] || 20)
const base = process.env.E2B_API_URL
const auth = { Authorization: `Bearer ${process.env.E2B_API_KEY}`, 'Content-Type': 'application/json' }
async function v1(method, path, body) {
  const res = await fetch(base + path, { method, headers: auth, body: body && JSON.stringify(body) })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? null : res.json()
}
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const r = { e2bCreateRun: [], v1CreateRun: [], e2bRun: [], v1Exec: [], v1ExecLoginShell: [] }

for (let i = 0; i < sandboxes; i++) {
  let t0 = process.hrtime.bigint()
  const sbx = await Sandbox.create()
  await sbx.commands.run('true')
  r.e2bCreateRun.push(ms(t0))
  for (let j = 0; j < trips; j++) {
    t0 = process.hrtime.bigint()
    await sbx.commands.run('true')
    r.e2bRun.push(ms(t0))
  }
  await sbx.kill()

  t0 = process.hrtime.bigint()
  const sb = await v1('POST', '/v1/sandboxes', {})
  await v1('POST', `/v1/sandboxes/${sb.id}/exec`, { command: 'true' })
  r.v1CreateRun.push(ms(t0))
  for (let j = 0; j < trips; j++) {
    t0 = process.hrtime.bigint()
    await v1('POST', `/v1/sandboxes/${sb.id}/exec`, { command: 'true' })
    r.v1Exec.push(ms(t0))
    // What commands.run('true') runs: the SDK sends bash -l -c true.
    t0 = process.hrtime.bigint()
    await v1('POST', `/v1/sandboxes/${sb.id}/exec`, { command: "exec /bin/bash -l -c 'true'" })
    r.v1ExecLoginShell.push(ms(t0))
  }
  await v1('DELETE', `/v1/sandboxes/${sb.id}`)
}
const out = Object.fromEntries(Object.entries(r).map(([k, xs]) => [k, { p50: +p50(xs).toFixed(1), n: xs.length }]))
out.createRunRatio = +(out.e2bCreateRun.p50 / out.v1CreateRun.p50).toFixed(2)
out.runRatio = +(out.e2bRun.p50 / out.v1Exec.p50).toFixed(2)
out.runRatioSameCommand = +(out.e2bRun.p50 / out.v1ExecLoginShell.p50).toFixed(2)
console.log(JSON.stringify(out, null, 1))
