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
// start runs argv through envd's Start RPC, as the SDK sends it, and
// reads the stream to its end.
async function start(id, token, cmd, args) {
  const msg = Buffer.from(JSON.stringify({ process: { cmd, args }, stdin: false }))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(msg.length, 1)
  const res = await fetch(base + '/process.Process/Start', {
    method: 'POST',
    headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token, 'Connect-Protocol-Version': '1', 'Content-Type': 'application/connect+json' },
    body: Buffer.concat([head, msg]),
  })
  const body = Buffer.from(await res.arrayBuffer())
  if (!res.ok || !body.includes('"end"')) throw new Error(`Start: ${res.status} ${body}`)
}
const r = { e2bCreateRun: [], v1CreateRun: [], e2bRun: [], v1Exec: [], v1ExecLoginShell: [], envdStartLoginShell: [] }

for (let i = 0; i < sandboxes; i++) {
  let t0 = process.hrtime.bigint()
  const sbx = await Sandbox.create()
  await sbx.commands.run('true')
  r.e2bCreateRun.push(ms(t0))
  const token = (await v1('GET', `/sandboxes/${sbx.sandboxId}`)).envdAccessToken
  for (let j = 0; j < trips; j++) {
    t0 = process.hrtime.bigint()
    await sbx.commands.run('true')
    r.e2bRun.push(ms(t0))
    t0 = process.hrtime.bigint()
    await start(sbx.sandboxId, token, '/bin/bash', ['-l', '-c', 'true'])
    r.envdStartLoginShell.push(ms(t0))
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
out.envdRatioSameCommand = +(out.envdStartLoginShell.p50 / out.v1ExecLoginShell.p50).toFixed(2)
console.log(JSON.stringify(out, null, 1))
