// Pause, resume, snapshots and fork through the real e2b SDK (issue 22), run by the
// TestE2BPause tests with E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY
// pointing at a boxkite server: pause keeps memory (boxkite's freeze),
// pause({keepMemory: false}) keeps the files only, Sandbox.connect resumes,
// list and getInfo report "paused", and lifecycle.onTimeout "pause"
// pauses at the end of the timeout. Each check prints "ok <name>"; the
// first failure throws and exits non-zero.
import { Sandbox, NotFoundError } from 'e2b'
import { check, rejects, sleep, until } from './check.mjs'

const run = process.env.RUN_ID
// FILESYSTEM_ONLY=1: the server cannot keep a paused sandbox's memory (the
// kube driver), so every pause is pause({keepMemory: false}) and the
// default pause must be refused.
const fsOnly = process.env.FILESYSTEM_ONLY === '1'
const pauseOpts = fsOnly ? { keepMemory: false } : {}
const readN = async (sbx) => Number((await sbx.files.read('/workspace/n')).trim())

// pause keeping memory: a counter stops and continues from the next value
const sbx = await Sandbox.create({ metadata: { suite: 'pause', run } })
await sbx.files.write('/workspace/kept.txt', 'kept\n')
// (n relative to the working directory, the workspace: the kube tests'
// pods are not jailed, so /workspace in a command would be the host's)
await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > n; sleep 0.1; done', { background: true, timeoutMs: 0 })
await until('the counter', async () => (await sbx.files.exists('/workspace/n')) && (await readN(sbx)) > 2)
const endBefore = (await sbx.getInfo()).endAt
check('pause', (await sbx.pause(pauseOpts)) === true)
check('pause.again-false', (await sbx.pause(pauseOpts)) === false)
const info = await Sandbox.getInfo(sbx.sandboxId)
check('getInfo.paused', info.state === 'paused', info)
const paused = await Sandbox.list({ query: { metadata: { run }, state: ['paused'] } }).nextItems()
check('list.paused', paused.length === 1 && paused[0].sandboxId === sbx.sandboxId && paused[0].state === 'paused', paused)
const running = await Sandbox.list({ query: { metadata: { run }, state: ['running'] } }).nextItems()
check('list.running-without-paused', running.length === 0, running)
const both = await Sandbox.list({ query: { metadata: { run } } }).nextItems()
check('list.default-both', both.length === 1 && both[0].state === 'paused', both)
// getMetrics of a paused sandbox: the memory it holds as it was paused
// (boxkite's freeze), no CPU; paused keeping its files only, it holds none
const pausedMetrics = await sbx.getMetrics()
check('getMetrics.paused', pausedMetrics.length === 1 && pausedMetrics[0].cpuUsedPct === 0 && pausedMetrics[0].memTotal > 0 &&
  (fsOnly ? pausedMetrics[0].memUsed === 0 : pausedMetrics[0].memUsed > 0), pausedMetrics)
check('envd.paused-refused', (await rejects(() => sbx.commands.run('true', { requestTimeoutMs: 10000 }))) !== null)
await sleep(1500)
const resumed = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120000 })
check('connect.resumes', resumed.sandboxId === sbx.sandboxId && (await Sandbox.getInfo(sbx.sandboxId)).state === 'running')
check('connect.endAt-not-shorter', (await sbx.getInfo()).endAt >= endBefore)
// the old object's token still works: same id, same tokens
if (fsOnly) {
  const refused = await rejects(() => sbx.pause())
  check('pause.memory-refused', refused !== null && /freeze/.test(refused.message), String(refused))
} else {
  // Until it moves on (a loaded machine may run the sandbox's counter
  // seldom), not a fixed 600 ms.
  const n1 = await readN(sbx)
  let n2 = n1
  await until('the counter to go on', async () => (n2 = await readN(resumed)) > n1)
  check('resume.counter-continues', n2 > n1 && n1 > 2, { n1, n2 })
}
check('resume.files', (await sbx.files.read('/workspace/kept.txt')) === 'kept\n')
check('connect.running-200', (await Sandbox.connect(sbx.sandboxId)).sandboxId === sbx.sandboxId)

// pause keeping the files only: processes end, files stay
check('pause.filesystem', (await sbx.pause({ keepMemory: false })) === true)
check('getInfo.paused-filesystem', (await Sandbox.getInfo(sbx.sandboxId)).state === 'paused')
await Sandbox.connect(sbx.sandboxId)
check('resume.filesystem-files', (await sbx.files.read('/workspace/kept.txt')) === 'kept\n')
const m1 = await readN(sbx)
await sleep(600)
check('resume.filesystem-processes-ended', (await readN(sbx)) === m1, m1)

// kill works on a paused sandbox
await sbx.pause(pauseOpts)
check('kill.paused', (await sbx.kill()) === true)
check('kill.paused-gone', (await rejects(() => Sandbox.getInfo(sbx.sandboxId))) instanceof NotFoundError)
check('pause.unknown-NotFound', (await rejects(() => Sandbox.pause(sbx.sandboxId))) instanceof NotFoundError)

// lifecycle.onTimeout "pause": paused, not killed, at the end of the timeout
const auto = await Sandbox.create({ metadata: { suite: 'pause', run, role: 'auto' }, timeoutMs: 120000, lifecycle: { onTimeout: 'pause' } })
await auto.files.write('/workspace/auto.txt', 'auto\n')
check('autoPause.lifecycle', (await auto.getInfo()).lifecycle?.onTimeout === 'pause', await auto.getInfo())
await auto.setTimeout(1000)
await until('the sandbox to auto-pause', async () => (await Sandbox.getInfo(auto.sandboxId)).state === 'paused', 60000)
check('autoPause.paused', true)
const back = await Sandbox.connect(auto.sandboxId)
check('autoPause.resumes', (await back.files.read('/workspace/auto.txt')) === 'auto\n')
check('autoPauseMemory.not-supported', /not supported/.test(String(await rejects(() => Sandbox.create({ lifecycle: { onTimeout: { action: 'pause', keepMemory: true } } })))))
await back.kill()

// snapshots: take one, list it, restore it with Sandbox.create, delete it
const src = await Sandbox.create({ metadata: { suite: 'pause', run, role: 'snap' }, envs: { SNAP_ENV: 'from-create', OVER: 'old' } })
await src.files.write('/workspace/snap.txt', 'before\n')
const snap = await src.createSnapshot({ name: 'e2b-snap' })
check('snapshot.create', typeof snap.snapshotId === 'string' && snap.names.includes('e2b-snap'), snap)
await src.files.write('/workspace/snap.txt', 'after\n')
const listedSnaps = await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems()
check('snapshot.list', listedSnaps.length === 1 && listedSnaps[0].snapshotId === snap.snapshotId, listedSnaps)
// listSnapshots({name}) reads the name as E2B does: [namespace/]alias[:tag]
// (no tag: any; "default": a name without one) or the snapshot's id
const named = async (name) => (await Sandbox.listSnapshots({ name }).nextItems()).map((s) => s.snapshotId)
const byNames = await Promise.all(['e2b-snap', 'e2b-snap:default', 'team/e2b-snap', snap.snapshotId, 'e2b-snap:v1'].map(named))
check('snapshot.list-by-name', byNames.slice(0, 4).every((ids) => ids.includes(snap.snapshotId)) && !byNames[4].includes(snap.snapshotId), byNames)
const tagged = await src.createSnapshot({ name: 'e2b-tagged:v1' })
const byTags = await Promise.all(['e2b-tagged', 'e2b-tagged:v1', 'e2b-tagged:v2', 'e2b-tagged:default'].map(named))
check('snapshot.list-by-tag', byTags[0].includes(tagged.snapshotId) && byTags[1].includes(tagged.snapshotId) &&
  !byTags[2].includes(tagged.snapshotId) && !byTags[3].includes(tagged.snapshotId), byTags)
await Sandbox.deleteSnapshot(tagged.snapshotId)
const restored = await Sandbox.create(snap.snapshotId, { metadata: { run, role: 'restored' } })
check('snapshot.restore', (await restored.files.read('/workspace/snap.txt')) === 'before\n')
// E2B's snapshot keeps envd's memory, so the environment its sandbox was
// created with, and a create from it adds its own envs over that
const withEnvs = await Sandbox.create(snap.snapshotId, { metadata: { run, role: 'restored' }, envs: { OVER: 'new' } })
const envOut = await withEnvs.commands.run('echo "$SNAP_ENV $OVER"')
check('snapshot.restore-envs', envOut.stdout === 'from-create new\n', envOut)
await withEnvs.kill()
// Sandbox.create takes a snapshot's name as well as its id: the newest of that name
const byName = await Sandbox.create('e2b-snap', { metadata: { run, role: 'restored' } })
check('snapshot.restore-by-name', (await byName.files.read('/workspace/snap.txt')) === 'before\n')
await byName.kill()
check('snapshot.delete', (await Sandbox.deleteSnapshot(snap.snapshotId)) === true)
check('snapshot.delete-again-false', (await Sandbox.deleteSnapshot(snap.snapshotId)) === false)
await restored.kill()

// fork: children with the parent's files, each its own
const forks = await src.fork({ count: 2 })
check('fork.count', forks.length === 2 && forks.every((f) => f instanceof Sandbox && f.sandboxId !== src.sandboxId), forks.map(String))
check('fork.files', (await forks[0].files.read('/workspace/snap.txt')) === 'after\n' && (await forks[1].files.read('/workspace/snap.txt')) === 'after\n')
await forks[0].files.write('/workspace/snap.txt', 'mine\n')
check('fork.isolated', (await forks[1].files.read('/workspace/snap.txt')) === 'after\n' && (await src.files.read('/workspace/snap.txt')) === 'after\n')
check('fork.unknown-NotFound', (await rejects(() => Sandbox.fork('no-such-sandbox'))) instanceof NotFoundError)
for (const f of forks) await f.kill()
await src.kill()
