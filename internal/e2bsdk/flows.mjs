// Acceptance flows of issue 21, run by TestE2BSDK (e2b_test.go) with the real
// e2b and @e2b/code-interpreter packages against a real boxkite-server:
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY point at it, OTHER_API_KEY
// is another account's key. Each check prints "ok <name>"; the first
// failure throws and exits non-zero. The last line is a JSON summary.
import { spawnSync } from 'node:child_process'
import { Sandbox, AuthenticationError, CommandExitError, InvalidArgumentError, NotFoundError } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { check, rejects, sleep, until } from './check.mjs'

const results = {}

const sbx = await Sandbox.create({ metadata: { suite: 'flows', run: process.env.RUN_ID }, envs: { SANDBOX_VAR: 'from-create' } })
check('create', typeof sbx.sandboxId === 'string' && sbx.sandboxId.length > 0, sbx.sandboxId)
results.sandboxId = sbx.sandboxId
// Without E2B_SANDBOX_URL the SDK would reach envd under the sandbox's
// domain: boxkite's host, never E2B's default e2b.app.
const host = sbx.getHost(8080)
check('domain', host === `8080-${sbx.sandboxId}.${new URL(process.env.E2B_API_URL).host}`, host)

// commands.run in the foreground
const fg = await sbx.commands.run('echo out-$SANDBOX_VAR-$REQ_VAR; echo err >&2; pwd', {
  envs: { REQ_VAR: 'from-run' }, cwd: '/tmp',
})
check('run.stdout', fg.stdout === 'out-from-create-from-run\n/tmp\n', fg)
check('run.stderr', fg.stderr === 'err\n', fg)
check('run.exitCode', fg.exitCode === 0, fg)
// envd gives a command its user's name, as it gives HOME
const who = await sbx.commands.run('echo "$USER $LOGNAME"')
check('run.USER', who.stdout === 'sandbox sandbox\n', who)
// the user option may name E2B's users; a user the sandbox does not have
// is refused, as envd refuses it, on RPCs, streams and /files alike
// a command (and envs) longer than the sidecar's query string takes: envd
// runs any the kernel does (128 KiB a word); it failed, internal
if (process.env.FLOWS_UNJAILED !== '1') { // the file it goes through is the sandbox's /tmp
  const longCmd = await sbx.commands.run('echo ' + 'a'.repeat(100000) + ' | wc -c; echo ${#BIG}; ls -a /tmp', { envs: { BIG: 'b'.repeat(60000) } })
  check('run.long-command', longCmd.stdout.startsWith('100001\n60000\n') && !longCmd.stdout.includes('.e2b-command-'), longCmd.stdout.slice(0, 200))
} else {
  check('run.long-command', true)
}
check('user.known', (await sbx.commands.run('echo ok', { user: 'root' })).stdout === 'ok\n')
for (const [what, call] of [
  ['run', () => sbx.commands.run('true', { user: 'nosuchuser' })],
  ['list', () => sbx.files.list('.', { user: 'nosuchuser' })],
  ['write', () => sbx.files.write('u.txt', 'x', { user: 'nosuchuser' })],
]) {
  const e = await rejects(call)
  check(`user.unknown-refused.${what}`, e instanceof AuthenticationError && e.message.includes("invalid username: 'nosuchuser'"), String(e))
}
const exitErr = await rejects(() => sbx.commands.run('echo partial; exit 7'))
check('run.CommandExitError', exitErr instanceof CommandExitError && exitErr.exitCode === 7 && exitErr.stdout === 'partial\n' &&
  exitErr.message === 'exit status 7', String(exitErr))
const timeoutErr = await rejects(() => sbx.commands.run('sleep 30', { timeoutMs: 1500 }))
check('run.timeoutMs', timeoutErr !== null && /timeout|timed out|deadline/i.test(String(timeoutErr)), String(timeoutErr))

// background, list, connect by pid, kill
const bg = await sbx.commands.run('for i in $(seq 1 600); do echo tick $i; sleep 0.1; done', { background: true, timeoutMs: 0 })
check('background.pid', bg.pid > 0, bg.pid)
const procs = await sbx.commands.list()
check('commands.list', procs.some((p) => p.pid === bg.pid && p.args.join(' ').includes('tick')), procs)
let attached = ''
const again = await sbx.commands.connect(bg.pid, { onStdout: (d) => { attached += d }, timeoutMs: 0 })
await until('output on the attached stream', () => attached.includes('tick'))
check('commands.connect', attached.includes('tick'), attached)
check('commands.kill', (await sbx.commands.kill(bg.pid)) === true)
const waited = await rejects(() => again.wait())
check('kill.ends', waited instanceof CommandExitError && waited.exitCode === -1 && waited.message === 'signal: killed', String(waited))
check('kill.unknown', (await sbx.commands.kill(bg.pid)) === false)
// a command that dies of a signal not sent by kill() ends as in envd: -1 and the signal's name,
// while one that exits 137 is exit code 137
const selfKilled = await rejects(() => sbx.commands.run('kill -TERM $$'))
check('signal.ends', selfKilled instanceof CommandExitError && selfKilled.exitCode === -1 && selfKilled.message === 'signal: terminated', String(selfKilled))
const exited137 = await rejects(() => sbx.commands.run('exit 137'))
check('signal.exit137', exited137 instanceof CommandExitError && exited137.exitCode === 137 && exited137.message === 'exit status 137', String(exited137))

// a client that disconnects leaves the process running
const detached = await sbx.commands.run('sleep 2; echo survived > /tmp/survived', { background: true, timeoutMs: 0 })
await detached.disconnect()
await until('the detached command to finish', async () => (await sbx.files.exists('/tmp/survived')))
check('disconnect.keeps-running', (await sbx.files.read('/tmp/survived')) === 'survived\n')

// stdin
const cat = await sbx.commands.run('cat', { background: true, stdin: true })
await sbx.commands.sendStdin(cat.pid, 'via stdin\n')
await sbx.commands.closeStdin(cat.pid)
const catRes = await cat.wait()
check('stdin', catRes.stdout === 'via stdin\n', catRes)
// 2 MiB in one sendStdin: sent whole, past the sidecar's frame limit, it
// killed the command
const wc = await sbx.commands.run('wc -c', { background: true, stdin: true })
await sbx.commands.sendStdin(wc.pid, 'y'.repeat(2 << 20))
await sbx.commands.closeStdin(wc.pid)
const wcRes = await wc.wait()
check('stdin.large', wcRes.stdout.trim() === String(2 << 20), wcRes)
// stdin to a command started without stdin: true was dropped in silence;
// envd refuses it, and so does boxkite
const noIn = await sbx.commands.run('sleep 60', { background: true, timeoutMs: 0 })
const noInErr = await rejects(() => sbx.commands.sendStdin(noIn.pid, 'lost\n'))
check('stdin.without-refused', noInErr !== null && /failed_precondition/.test(String(noInErr)), String(noInErr))
await sbx.commands.kill(noIn.pid)

// files
await sbx.files.write('/workspace/hello.txt', 'hello, e2b\n')
check('files.write-read-text', (await sbx.files.read('/workspace/hello.txt')) === 'hello, e2b\n')
// a destination in a directory: write([...]) names it only by the part's filename
const nested = await sbx.files.write([{ path: 'in/a dir/one.txt', data: 'one' }, { path: '/tmp/in/two.txt', data: 'two' }])
check('files.write-nested', nested.map((e) => e.path).join() === '/home/user/in/a dir/one.txt,/tmp/in/two.txt' &&
  (await sbx.files.read('in/a dir/one.txt')) === 'one' && (await sbx.files.read('/tmp/in/two.txt')) === 'two', nested)
const big = new Uint8Array(5 * 1024 * 1024)
for (let i = 0; i < big.length; i++) big[i] = (i * 7919 + (i >> 13)) & 0xff
await sbx.files.write('/workspace/big.bin', big.buffer)
const back = await sbx.files.read('/workspace/big.bin', { format: 'bytes' })
check('files.binary-5MiB', back.length === big.length && back.every((b, i) => b === big[i]), back.length)
const entries = await sbx.files.list('/workspace')
check('files.list', entries.some((e) => e.name === 'hello.txt' && e.type === 'file') && entries.some((e) => e.name === 'big.bin' && e.size === big.length), entries)
check('files.exists', (await sbx.files.exists('/workspace/hello.txt')) === true && (await sbx.files.exists('/workspace/nope')) === false)
const info = await sbx.files.getInfo('/workspace/hello.txt')
check('files.getInfo', info.type === 'file' && info.size === 11 && info.path === '/workspace/hello.txt' && info.permissions === '-rw-r--r--', info)
const moved = await sbx.files.rename('/workspace/hello.txt', '/workspace/sub/renamed.txt')
check('files.rename', moved.path === '/workspace/sub/renamed.txt' && (await sbx.files.read('/workspace/sub/renamed.txt')) === 'hello, e2b\n' && !(await sbx.files.exists('/workspace/hello.txt')), moved)
// a source that is not there: envd's NotFoundError and message; the destination's parents are made first, as envd's Move does
const moveMissing = await rejects(() => sbx.files.rename('/workspace/absent.txt', '/workspace/renamed/x.txt'))
check('files.rename-missing', moveMissing instanceof NotFoundError &&
  moveMissing.message.includes('source file not found: rename /workspace/absent.txt /workspace/renamed/x.txt: no such file or directory') &&
  (await sbx.files.exists('/workspace/renamed')), String(moveMissing))
check('files.makeDir', (await sbx.files.makeDir('/workspace/made/deep')) === true && (await sbx.files.makeDir('/workspace/made/deep')) === false)
// a file where the directory should be is not "already there" (false)
const onFile = await rejects(() => sbx.files.makeDir('/workspace/big.bin'))
check('files.makeDir-on-file', onFile instanceof InvalidArgumentError, String(onFile))
// a backslash is refused, not taken for a slash (written to another path)
const slashed = await rejects(() => sbx.files.write('back\\slash.txt', 'x'))
check('files.backslash-refused', slashed instanceof InvalidArgumentError && !(await sbx.files.exists('back/slash.txt')), String(slashed))
const deep = await sbx.files.list('/workspace', { depth: 3 })
check('files.list-depth', deep.some((e) => e.path === '/workspace/made/deep' && e.type === 'dir'), deep.map((e) => e.path))
// as envd's WalkDir: by name, a directory's contents after it; mode the permission bits
const walked = deep.map((e) => e.path)
const made = deep.find((e) => e.path === '/workspace/made')
const byParts = (a, b) => {
  const [x, y] = [a.split('/'), b.split('/')]
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1
  return x.length - y.length
}
check('files.list-order-mode', walked.join('\n') === walked.toSorted(byParts).join('\n') &&
  made.mode === 0o755 && made.permissions === 'drwxr-xr-x', { walked, mode: made.mode })
await sbx.files.remove('/workspace/made')
check('files.remove', (await sbx.files.exists('/workspace/made')) === false)
// as envd's os.RemoveAll, a path that is not there is removed already
check('files.remove-missing', (await rejects(() => sbx.files.remove('/workspace/made'))) === null)
const missing = await rejects(() => sbx.files.read('/workspace/absent.txt'))
check('files.read-missing', missing instanceof NotFoundError, String(missing))
const upUrl = await sbx.uploadUrl('/workspace/signed.txt', { useSignatureExpiration: 60 })
const form = new FormData()
form.append('file', new Blob(['signed upload']), '/workspace/signed.txt')
const upRes = await fetch(upUrl, { method: 'POST', body: form })
check('files.uploadUrl', upRes.ok && (await sbx.files.read('/workspace/signed.txt')) === 'signed upload', upRes.status)
const downRes = await fetch(await sbx.downloadUrl('/workspace/signed.txt'))
check('files.downloadUrl', downRes.ok && (await downRes.text()) === 'signed upload', downRes.status)
const forged = await fetch(upUrl.replace(/signature=[^&]+/, 'signature=v1_forged'), { method: 'POST', body: form })
check('files.signedUrl-forged', forged.status === 401, forged.status)
const events = []
const watch = await sbx.files.watchDir('/workspace', (e) => events.push(e), { timeoutMs: 0 })
await sbx.files.write('/workspace/watched.txt', 'x')
// files.write shows as a write (E2B's docs watch for FilesystemEventType.WRITE), not a create alone
await until('a write event', () => events.some((e) => e.name === 'watched.txt' && e.type === 'write'))
await watch.stop()
check('files.watchDir', events.some((e) => e.name === 'watched.txt' && e.type === 'write'), events)

// /home/user, E2B's home, is the workspace: files, lists, relative paths,
// cwd and watches name it as asked; HOME is it; commands find it (the
// kube tests' pods are not jailed: there TestPodSpec checks the mount)
const homeWatch = []
const hw = await sbx.files.watchDir('/home/user', (e) => homeWatch.push(e), { timeoutMs: 0 })
const homeInfo = await sbx.files.write('/home/user/home.txt', 'home\n')
const relInfo = await sbx.files.write('rel dir/rel.txt', 'rel\n')
check('home.files', homeInfo.path === '/home/user/home.txt' && relInfo.path === '/home/user/rel dir/rel.txt' &&
  (await sbx.files.read('/workspace/home.txt')) === 'home\n' && (await sbx.files.read('/home/user/rel dir/rel.txt')) === 'rel\n' &&
  (await sbx.files.getInfo('/home/user/home.txt')).path === '/home/user/home.txt', { homeInfo, relInfo })
const homeList = await sbx.files.list('/home/user', { depth: 2 })
check('home.list', homeList.some((e) => e.path === '/home/user/home.txt') && homeList.some((e) => e.path === '/home/user/rel dir/rel.txt') &&
  homeList.every((e) => e.path.startsWith('/home/user/')), homeList.map((e) => e.path))
const homeMoved = await sbx.files.rename('/home/user/rel dir/rel.txt', '/home/user/moved.txt')
check('home.rename', homeMoved.path === '/home/user/moved.txt' && (await sbx.files.exists('/workspace/moved.txt')), homeMoved)
const inHome = await sbx.commands.run('cat home.txt; echo "$HOME"', { cwd: '/home/user' })
check('home.cwd-HOME', inHome.stdout === 'home\n/home/user\n', inHome)
// errors name a path as it was asked too, as envd names the path it was given
const asAsked = {
  read: await rejects(() => sbx.files.read('/home/user/absent.txt')),
  'read-relative': await rejects(() => sbx.files.read('absent.txt')),
  cwd: await rejects(() => sbx.commands.run('pwd', { cwd: 'nowhere' })),
  watchDir: await rejects(() => sbx.files.watchDir('/home/user/nowhere', () => {})),
}
check('home.errors-as-asked', Object.entries(asAsked).every(([k, e]) => e !== null &&
  e.message.includes(k === 'cwd' || k === 'watchDir' ? '/home/user/nowhere' : '/home/user/absent.txt') && !e.message.includes('/workspace/')),
Object.fromEntries(Object.entries(asAsked).map(([k, e]) => [k, String(e)])))
if (process.env.FLOWS_UNJAILED !== '1') {
  const byPath = await sbx.commands.run('cat /home/user/home.txt && echo made > /home/user/made.txt')
  check('home.in-sandbox', byPath.stdout === 'home\n' && (await sbx.files.read('/workspace/made.txt')) === 'made\n', byPath)
} else {
  check('home.in-sandbox', true)
}
// a symlink is what it points to, as envd lists one: the target's type
// and mode and its resolved path; a dangling one is left out
await sbx.files.makeDir('/home/user/lk/sub')
await sbx.commands.run('chmod 700 lk/sub && ln -s sub lk/lnk && ln -s nowhere lk/dead', { cwd: '/home/user' })
const lk = await sbx.files.list('/home/user/lk')
const lnk = lk.find((e) => e.name === 'lnk')
const lnkInfo = await sbx.files.getInfo('/home/user/lk/lnk')
check('files.symlink', lnk && lnk.type === 'dir' && lnk.mode === 0o700 && lnk.symlinkTarget === '/home/user/lk/sub' &&
  lnkInfo.type === 'dir' && lnkInfo.symlinkTarget === '/home/user/lk/sub' && !lk.some((e) => e.name === 'dead'), { lk, lnkInfo })
// getMetrics' cpuUsedPct is the sandbox's CPU use, and grows while a
// command spins: the local driver's cgroup, or on kube the cgroup of the
// pod's container, which its sidecar reads (GET /usage)
const spin = await sbx.commands.run('while :; do :; done', { background: true, timeoutMs: 0 })
let cpu = 0
await until('cpuUsedPct above 0', async () => { cpu = (await sbx.getMetrics())[0].cpuUsedPct; return cpu > 0 }, 60000)
await spin.kill()
check('getMetrics.cpu', cpu > 0 && cpu <= 100, cpu)
await until('a write event under /home/user', () => homeWatch.some((e) => e.name === 'home.txt' && e.type === 'write'))
await hw.stop()
check('home.watchDir', true)

// pty
let screen = ''
const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += new TextDecoder().decode(d) }, timeoutMs: 0 })
await sbx.pty.sendInput(term.pid, new TextEncoder().encode('echo pty-$((40+2))\n'))
await until('the echoed pty output', () => screen.includes('pty-42'))
check('pty.echo', screen.includes('pty-42'), screen)
await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size\n'))
await until('the resized terminal size', () => screen.includes('30 100'))
check('pty.resize', screen.includes('30 100'), screen)
// 0x0 is refused alike by create (it was given 80x24) and by resize.
const zeroCreate = await rejects(() => sbx.pty.create({ cols: 0, rows: 0, onData: () => {}, timeoutMs: 0 }))
const zeroResize = await rejects(() => sbx.pty.resize(term.pid, { cols: 0, rows: 0 }))
check('pty.size-refused', zeroCreate instanceof InvalidArgumentError && zeroResize instanceof InvalidArgumentError,
  `${zeroCreate} / ${zeroResize}`)
// A terminal's input is the pty's, as envd has it: stdin to it is refused.
const ptyStdin = await rejects(() => sbx.commands.sendStdin(term.pid, 'typed\n'))
check('pty.stdin-refused', ptyStdin !== null && /failed_precondition/.test(String(ptyStdin)), String(ptyStdin))
// and a command has no terminal to resize (it answered success)
const plain = await sbx.commands.run('sleep 60', { background: true, timeoutMs: 0 })
const plainResize = await rejects(() => sbx.pty.resize(plain.pid, { cols: 100, rows: 30 }))
check('pty.resize-command-refused', plainResize !== null && /failed_precondition/.test(String(plainResize)), String(plainResize))
await plain.kill()
await sbx.pty.kill(term.pid)

// the control plane
const page = await Sandbox.list({ query: { metadata: { suite: 'flows', run: process.env.RUN_ID } } }).nextItems()
check('list.metadata', page.length === 1 && page[0].sandboxId === sbx.sandboxId && page[0].metadata.suite === 'flows', page)
const none = await Sandbox.list({ query: { metadata: { suite: 'no-such-suite' } } }).nextItems()
check('list.metadata-none', none.length === 0, none)
// a query E2B's API spec refuses (here a limit above 100) is its request
// validator's 400 there, not a 422
const badLimit = await rejects(() => Sandbox.list({ limit: 101 }).nextItems())
check('list.bad-query-400', badLimit !== null && badLimit.statusCode === 400, String(badLimit))
// a timeout past the server's maximum lifetime is cut to it, as E2B's
// KeepAliveFor cuts one (it was refused)
const long = await Sandbox.create({ timeoutMs: 10 ** 11, metadata: { run: process.env.RUN_ID, role: 'long' } })
const longInfo = await long.getInfo()
await long.kill()
await sbx.setTimeout(10 ** 11)
const capped = await sbx.getInfo()
const twoDays = 48 * 3600 * 1000
check('timeout.cut-to-maximum', longInfo.endAt - Date.now() < twoDays && capped.endAt - Date.now() < twoDays && capped.endAt - Date.now() > 600000,
  { create: longInfo.endAt, setTimeout: capped.endAt })
await sbx.setTimeout(600000)
// a create E2B refuses (a timeout below 1 s): 400, not /v1's 422
const badCreate = await rejects(() => Sandbox.create({ timeoutMs: -5000 }))
check('create.bad-timeout-400', badCreate !== null && badCreate.statusCode === 400, String(badCreate))
const got = await sbx.getInfo()
check('getInfo', got.sandboxId === sbx.sandboxId && got.metadata.run === process.env.RUN_ID && got.endAt > got.startedAt, got)

// pause and resume: pause.mjs

const child = spawnSync(process.execPath, [new URL('./connect.mjs', import.meta.url).pathname, sbx.sandboxId], { encoding: 'utf8', env: process.env })
check('connect.new-process', child.status === 0 && child.stdout.includes('connected-out'), { status: child.status, out: child.stdout, err: child.stderr })

const other = { apiKey: process.env.OTHER_API_KEY }
check('tenant.getInfo', (await rejects(() => Sandbox.getInfo(sbx.sandboxId, other))) instanceof NotFoundError)
check('tenant.connect', (await rejects(() => Sandbox.connect(sbx.sandboxId, other))) instanceof NotFoundError)
check('tenant.setTimeout', (await rejects(() => Sandbox.setTimeout(sbx.sandboxId, 60000, other))) instanceof NotFoundError)
check('tenant.kill', (await Sandbox.kill(sbx.sandboxId, other)) === false)
check('tenant.list', (await Sandbox.list({ ...other, query: { metadata: { run: process.env.RUN_ID } } }).nextItems()).length === 0)

// setTimeout really ends the sandbox
const short = await Sandbox.create({ metadata: { run: process.env.RUN_ID, role: 'short' } })
await short.setTimeout(2000)
await until('the sandbox to expire', async () => !(await short.isRunning()), 60000)
check('setTimeout.expires', (await rejects(() => Sandbox.getInfo(short.sandboxId))) instanceof NotFoundError)

// the code interpreter
const ci = await CodeSandbox.create({ metadata: { run: process.env.RUN_ID, role: 'ci' }, envs: { CI_A: 'create', CI_B: 'create' } })
results.codeSandboxId = ci.sandboxId
// two running sandboxes of this run now (the short one expired): pages of one, oldest first
const pager = Sandbox.list({ query: { metadata: { run: process.env.RUN_ID } }, limit: 1, order: 'asc' })
const page1 = await pager.nextItems()
const more = pager.hasNext
const page2 = await pager.nextItems()
check('list.pages', page1.length === 1 && page1[0].sandboxId === sbx.sandboxId && more && page2.length === 1 && page2[0].sandboxId === ci.sandboxId && !pager.hasNext,
  { page1, more, page2, hasNext: pager.hasNext })
await ci.runCode('x = 41')
const sum = await ci.runCode('x + 1')
check('runCode.state', sum.text === '42', sum)
const blank = await ci.runCode('')
check('runCode.empty', !blank.error && blank.results.length === 0, blank)
// a language is read as E2B's server reads it: trimmed, in any case
const spaced = await ci.runCode('x + 2', { language: ' Python ' })
check('runCode.language-trimmed', spaced.text === '43' && !spaced.error, { text: spaced.text, error: spaced.error })
const printed = await ci.runCode('print("printed")')
check('runCode.stdout', printed.logs.stdout.join('') === 'printed\n', printed.logs)
const raised = await ci.runCode('raise ValueError("boom")')
check('runCode.error', raised.error && raised.error.name === 'ValueError' && raised.error.value === 'boom' && raised.error.traceback.includes('ValueError'), raised.error)
const envs = await ci.runCode('import os; (os.environ.get("CI_A"), os.environ.get("CI_B"))', { envs: { CI_B: 'run' } })
check('runCode.envs', envs.text === "('create', 'run')", envs)
// a call's envs are that call's (they stayed set for every later call), and
// set no line of the cell: its traceback's line numbers are its own
const after = await ci.runCode('import os\nos.environ.get("CI_B")')
const lined = await ci.runCode('x0 = 1\n1/0', { envs: { CI_C: 'c' } })
check('runCode.envs-scoped', after.text === "'create'" && lined.error && lined.error.traceback.includes('line 2,'),
  { after: after.text, traceback: lined.error && lined.error.traceback })
const cctx = await ci.createCodeContext()
await ci.runCode('x = 1', { context: cctx })
check('runCode.contexts', (await ci.runCode('x', { context: cctx })).text === '1' && (await ci.runCode('x')).text === '41')
// a context's cwd is its own: it was left as the default context's
const homeDir = (await ci.runCode('import os; os.getcwd()')).text
const tmpCtx = await ci.createCodeContext({ cwd: '/tmp' })
const inTmp = (await ci.runCode('import os; os.getcwd()', { context: tmpCtx })).text
const homeAfter = (await ci.runCode('import os; os.getcwd()')).text
check('runCode.context-cwd', inTmp === "'/tmp'" && homeAfter === homeDir && homeDir !== "'/tmp'", { homeDir, inTmp, homeAfter })
// a cwd that is not there: E2B sets it with IPython's %cd, which prints
// the error and stays, so the context runs where the interpreter is
const lostCtx = await ci.createCodeContext({ cwd: '/nonexistent' })
const inLost = await ci.runCode('import os; os.getcwd()', { context: lostCtx })
check('runCode.context-missing-cwd', !inLost.error && inLost.text === homeDir, { homeDir, text: inLost.text, error: inLost.error })
// a context's traceback is the user's code only, not the runner's frames
const ctxErr = await ci.runCode('x1 = 1\n1/0', { context: tmpCtx })
check('runCode.context-traceback', ctxErr.error && ctxErr.error.name === 'ZeroDivisionError' && !ctxErr.error.traceback.includes('boxkite') &&
  (ctxErr.error.traceback.match(/File /g) || []).length === 1 && ctxErr.error.traceback.includes('line 2,'), ctxErr.error)
// onStdout fires while the cell runs: the cell waits for a file that the
// first callback writes, so it ends only if its first line came before its
// end (once at the end, it would wait until timeoutMs); the cell looks in
// its working directory, the workspace (/workspace on the local driver,
// the sidecar's directory under the kube tests' fake kubelet)
const seen = []
const streamed = await ci.runCode(
  "import os, time\nprint('first', flush=True)\nwhile not os.path.exists('stream-go-on'): time.sleep(0.05)\nprint('second')\n'done'",
  {
    timeoutMs: 120000,
    onStdout: async (m) => {
      seen.push(m.line)
      if (seen.length === 1) await ci.files.write('/workspace/stream-go-on', '')
    },
    onResult: (r) => { seen.push(`result:${r.text}`) },
  })
check('runCode.onStdout-streams', seen.length >= 3 && seen[0] === 'first\n' && seen.at(-1) === "result:'done'" &&
  seen.slice(1, -1).join('') === 'second\n' && streamed.logs.stdout.join('') === 'first\nsecond\n', { seen, logs: streamed.logs })
// timeoutMs counts from the answer's headers, which come while the cell
// runs; the abort interrupts the cell (KeyboardInterrupt) and the
// interpreter keeps its variables, as E2B's kernel does
const cut = await rejects(() => ci.runCode(
  'import time\ntry:\n    time.sleep(600)\nexcept KeyboardInterrupt:\n    interrupted = True\n    raise', { timeoutMs: 2000 }))
// (the SDK's words for timeoutMs, not for requestTimeoutMs: the headers came while the cell was silent)
check('runCode.timeoutMs', cut !== null && cut.name === 'TimeoutError' && cut.message.includes("the 'timeoutMs' option"), cut && { name: cut.name, message: cut.message })
const kept = await ci.runCode('(x, interrupted)', { timeoutMs: 120000 })
check('runCode.interrupt-keeps-state', kept.text === '(41, True)', { text: kept.text, error: kept.error })
await ci.kill()

// kill, then the sandbox is not found
check('kill', (await sbx.kill()) === true)
check('kill.NotFoundError', (await rejects(() => Sandbox.connect(sbx.sandboxId))) instanceof NotFoundError)
check('kill.commands-fail', (await rejects(() => sbx.commands.run('true'))) !== null)

console.log(JSON.stringify(results))
