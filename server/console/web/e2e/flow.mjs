// The console's acceptance flow in a real browser (issue 29): Playwright
// (playwright-core) drives Debian's chromium against a running boxkite
// server. cmd/boxkite-server's TestConsoleInBrowser runs it and checks
// what it reports.
//
//   node flow.mjs '<json: {base, email, password, otherSandbox, artifacts, chromium}>'
//
// It prints one JSON object per line: {"check", "ok", "detail"} for each
// check, {"screenshot": path, "page"} for each screenshot, and
// {"done": true} at the end. A thrown error prints {"error"} and exits 1.
import { chromium } from 'playwright-core';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const cfg = JSON.parse(process.argv[2]);
const base = cfg.base.replace(/\/$/, '');
const origin = new URL(base).origin;

function report(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }
function check(name, ok, detail = '') { report({ check: name, ok: !!ok, detail: String(detail) }); }

let shot = 0;
async function screenshot(page, name) {
  const path = join(cfg.artifacts, String(++shot).padStart(2, '0') + '-' + name + '.png');
  await page.screenshot({ path, fullPage: true });
  report({ screenshot: path, page: name });
}

// Everything the pages ask for, to prove no third-party origin is ever
// contacted, and every CSP violation and script error they meet.
const foreign = [];
const violations = [];
const errors = [];
function watch(page) {
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin + '/') && !u.startsWith('data:') && !u.startsWith('blob:')) foreign.push(u);
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  // An HTTP error status is logged as 'Failed to load resource'; the pages
  // handle those. Anything else logged as an error is a fault.
  page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of \d+/.test(m.text())) errors.push(m.text()); });
}
const cspProbe = () => {
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
};
async function collectCSP(page) {
  const v = await page.evaluate(() => window.__csp || []);
  violations.push(...v);
}

const browser = await chromium.launch({
  executablePath: cfg.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
try {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, colorScheme: 'light' });
  await ctx.addInitScript(cspProbe);
  const page = await ctx.newPage();
  watch(page);

  // Sign in, by keyboard only: the email field has the focus.
  await page.goto(base + '/ui/');
  await page.waitForSelector('[data-page=signin]');
  check('signin.redirect', page.url().startsWith(base + '/ui/signin'), page.url());
  await screenshot(page, 'signin');
  await page.keyboard.type(cfg.email);
  await page.keyboard.press('Tab');
  await page.keyboard.type(cfg.password);
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-page=sandboxes]');
  check('signin.keyboard', true);
  const cookies = await ctx.cookies();
  const ck = cookies.find((c) => c.name === 'boxkite_console');
  check('signin.cookie', ck && ck.httpOnly && ck.sameSite === 'Strict' && ck.path === '/ui/', JSON.stringify(ck && { ...ck, value: '…' }));
  check('signin.cookie-hidden', !(await page.evaluate(() => document.cookie.includes('boxkite_console'))));

  // Create a sandbox.
  await page.fill('input[name=label]', 'ui-e2e');
  await page.fill('input[name=lifetime]', '1400'); // 40 minutes short of the test server's longest
  await page.click('button:text("Create sandbox")');
  const row = page.locator('tr', { hasText: 'ui-e2e' });
  await row.waitFor({ timeout: 60000 });
  const id = await row.getAttribute('data-id');
  check('create', /^[0-9a-f-]{36}$/.test(id || ''), id);
  await screenshot(page, 'sandboxes');

  // Extend adds 30 minutes to what is left; past the server's longest
  // lifetime it says so, with the API's hint.
  const expiry = () => page.evaluate(async (i) => Date.parse((await (await fetch('/ui/api/v1/sandboxes/' + i)).json()).expires_at), id);
  const listStatus = page.locator('[data-page=sandboxes] p.status');
  const before = await expiry();
  await row.locator('button:text("Extend")').click();
  await listStatus.filter({ hasText: 'Extended' }).waitFor({ timeout: 30000 });
  const after = await expiry();
  check('extend.adds', after - before >= 29 * 60e3, (after - before) / 60e3 + ' min later');
  await row.locator('button:text("Extend")').click();
  await listStatus.filter({ hasText: 'maximum lifetime' }).waitFor({ timeout: 30000 });
  check('extend.hint', (await expiry()) === after, await listStatus.textContent());

  // The live audit log, in a second tab, before anything is typed.
  const logPage = await ctx.newPage();
  watch(logPage);
  await logPage.goto(base + '/ui/sandboxes/' + id + '/log');
  await logPage.waitForSelector('[data-page=log]');
  await logPage.waitForFunction(() => /Live/.test(document.querySelector('[data-page=log] .status').textContent), null, { timeout: 60000 });

  // The terminal: type, see the output.
  await row.locator('a:text("Terminal")').click();
  await page.waitForSelector('#terminal[data-state=open]', { timeout: 30000 });
  await page.waitForTimeout(300); // the shell's prompt
  await page.keyboard.type('echo hi-from-ui');
  const entered = Date.now();
  await page.keyboard.press('Enter');
  const outputLine = () => [...document.querySelectorAll('#terminal .xterm-rows > div')].some((r) => r.textContent.trim() === 'hi-from-ui');
  await page.waitForFunction(outputLine, null, { timeout: 60000 });
  check('terminal.output', true, 'a line "hi-from-ui"');
  await screenshot(page, 'terminal');

  // …and the command in the live log as Enter is pressed. The test's
  // server flushes typed bytes only hourly (--takeover-flush-interval), so
  // an entry that arrives at all was written by the Enter and pushed to
  // the open page: what issue 29's "within a second" asks, checked without
  // a wall-clock bound a loaded machine can miss. The log page stamps each
  // entry with when it arrived (same machine, same clock): the figure is
  // reported.
  await logPage.waitForFunction(() => [...document.querySelectorAll('ol.log li')].some((li) => li.dataset.text.includes('echo hi-from-ui')), null, { timeout: 60000 });
  const received = Number(await logPage.locator('ol.log li', { hasText: 'echo hi-from-ui' }).first().getAttribute('data-received'));
  const took = received - entered;
  check('log.live-on-enter', true, took + ' ms after Enter');
  const entry = logPage.locator('ol.log li', { hasText: 'echo hi-from-ui' }).first();
  await entry.locator('summary').click();
  check('log.expand', (await entry.locator('pre.detail').textContent()).includes('"input"'));
  await screenshot(logPage, 'audit-log');

  // The shell gets the terminal's size, and the new one when the window
  // shrinks.
  const sttySize = async (tag) => {
    await page.keyboard.type('echo ' + tag + '=$(stty size)');
    await page.keyboard.press('Enter');
    const re = new RegExp('^' + tag + '=(\\d+) (\\d+)$');
    const line = await page.waitForFunction((re) => [...document.querySelectorAll('#terminal .xterm-rows > div')]
      .map((r) => r.textContent.trim()).find((t) => new RegExp(re).test(t)), re.source, { timeout: 60000 });
    const [, rows, cols] = re.exec(await line.jsonValue()).map(Number);
    return { rows, cols, shown: await page.locator('#terminal .xterm-rows > div').count() };
  };
  const big = await sttySize('size1');
  await page.setViewportSize({ width: 900, height: 600 });
  // Type only once the terminal has fit the smaller window: its resize
  // goes to the shell before any key typed after it (a fixed wait raced
  // a loaded machine's browser).
  await page.waitForFunction((before) => document.querySelectorAll('#terminal .xterm-rows > div').length < before, big.shown, { timeout: 60000 });
  const small = await sttySize('size2');
  await page.setViewportSize({ width: 1280, height: 800 });
  check('terminal.resize', big.rows === big.shown && small.rows === small.shown && small.rows < big.rows && small.cols < big.cols && small.cols > 20,
    `${big.rows}x${big.cols} (${big.shown} rows shown), then ${small.rows}x${small.cols} (${small.shown} shown)`);

  // A paste bigger than a frame the server takes (1 MiB) reaches the
  // shell whole, and the terminal stays open. xterm.js sends a paste as one
  // piece of data; the page must cut it into frames.
  await page.waitForFunction((n) => document.querySelectorAll('#terminal .xterm-rows > div').length === n, big.shown, { timeout: 60000 });
  // lastLine is the terminal's line that matches re, or why it closed.
  const lastLine = (re) => {
    const box = document.querySelector('#terminal');
    if (box.dataset.state === 'closed') return 'closed: ' + document.querySelector('[data-page=terminal] .status').textContent;
    return [...box.querySelectorAll('.xterm-rows > div')].map((r) => r.textContent.trim()).find((t) => new RegExp(re).test(t));
  };
  await page.keyboard.type('stty -echo; echo paste-ready; wc -c; stty echo');
  await page.keyboard.press('Enter');
  // Once the shell runs the command, xterm.js no longer brackets a paste.
  await page.waitForFunction(lastLine, '^paste-ready$', { timeout: 60000 });
  const pasted = ('a'.repeat(1023) + '\n').repeat(1100);
  await page.evaluate((text) => {
    const dt = new DataTransfer();
    dt.setData('text/plain', text);
    document.querySelector('#terminal textarea').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, pasted);
  await page.keyboard.press('Control+D');
  const counted = await (await page.waitForFunction(lastLine, '^(\\d{6,}|closed: .*)$', { timeout: 120000 })).jsonValue();
  check('terminal.paste-1mib', counted === String(pasted.length), counted + ' bytes counted of ' + pasted.length);

  // A mouse report in X10's encoding is bytes, not text (xterm.js's
  // onBinary): a click on column 100 is reported as the byte 32+100 or
  // so, which must reach the terminal as that byte, not as its UTF-8
  // encoding.
  await page.keyboard.type("stty raw -echo; printf 'mouse-ready\\r\\n\\033[?1000h'; head -c 12 | od -An -tx1 | tr -d ' \\n'; printf '\\033[?1000l'; stty sane; echo");
  await page.keyboard.press('Enter');
  await page.waitForFunction(lastLine, '^mouse-ready$', { timeout: 60000 });
  const screen = await page.locator('#terminal .xterm-screen').boundingBox();
  const cellW = screen.width / big.cols, cellH = screen.height / big.rows;
  await page.mouse.click(screen.x + cellW * 99.5, screen.y + cellH * 1.5); // column 100, row 2: press and release
  const mouseReport = await (await page.waitForFunction(lastLine, '^(1b5b4d[0-9a-f]{18}|closed: .*)$', { timeout: 60000 })).jsonValue();
  // Press and release, 6 bytes each, on the same cell: a column byte of
  // 0x80 or more, not split in two.
  check('terminal.mouse-bytes', big.cols >= 100 && /^1b5b4d20([89a-f][0-9a-f])([0-9a-f]{2})1b5b4d23\1\2$/.test(mouseReport), mouseReport + ' (' + big.cols + ' columns)');

  // A read-only viewer sees the terminal but cannot type into it.
  const viewer = await ctx.newPage();
  watch(viewer);
  await viewer.goto(base + '/ui/sandboxes/' + id + '/terminal?read_only=1');
  await viewer.waitForSelector('#terminal[data-state=open]', { timeout: 30000 });
  check('readonly.checkbox', await viewer.isChecked('#read-only'));
  await viewer.click('#terminal');
  await viewer.keyboard.type('echo typed-by-viewer');
  await viewer.keyboard.press('Enter');
  await page.keyboard.type('echo seen-by-viewer');
  await page.keyboard.press('Enter');
  const seen = (text) => [...document.querySelectorAll('#terminal .xterm-rows > div')].some((r) => r.textContent.trim() === text);
  await viewer.waitForFunction(seen, 'seen-by-viewer', { timeout: 60000 });
  await page.waitForTimeout(1000);
  const viewerText = await viewer.locator('#terminal .xterm-rows').textContent();
  const writerText = await page.locator('#terminal .xterm-rows').textContent();
  check('readonly.sees-others', true);
  check('readonly.cannot-type', !viewerText.includes('typed-by-viewer') && !writerText.includes('typed-by-viewer'), viewerText.slice(-200));
  await screenshot(viewer, 'terminal-read-only');
  await viewer.close();

  // The keyboard gets out of the terminal: Escape, then Shift+Tab (to
  // the toolbar above it).
  await page.click('#terminal');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Shift+Tab');
  check('terminal.keyboard-leaves', await page.evaluate(() => document.activeElement.closest('.toolbar') !== null),
    await page.evaluate(() => document.activeElement.outerHTML.slice(0, 80)));

  // Files: upload, then download, byte-exact.
  await page.goto(base + '/ui/sandboxes/' + id);
  await page.waitForSelector('[data-page=sandbox]');
  const data = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(300 * 1024)]);
  const sha = (b) => createHash('sha256').update(b).digest('hex');
  await page.setInputFiles('#upload', { name: 'ui-e2e.bin', mimeType: 'application/octet-stream', buffer: data });
  await page.waitForFunction(() => /Uploaded \u2068ui-e2e\.bin\u2069/.test(document.querySelector('[data-page=sandbox] .status').textContent), null, { timeout: 30000 });
  const dl = page.locator('a[aria-label="Download ui-e2e.bin"]');
  await dl.waitFor();
  await screenshot(page, 'sandbox');
  const [download] = await Promise.all([page.waitForEvent('download'), dl.click()]);
  const saved = join(cfg.artifacts, 'downloaded.bin');
  await download.saveAs(saved);
  const got = readFileSync(saved);
  check('files.byte-exact', got.length === data.length && sha(got) === sha(data), got.length + ' bytes, want ' + data.length);

  // The terminals that ended are recorded (the test's server records
  // takeovers): the log offers each takeover_end's asciicast.
  const recLink = logPage.locator('ol.log li[data-op=takeover_end] a.recording').first();
  await recLink.waitFor({ state: 'attached', timeout: 60000 });
  await recLink.evaluate((a) => { a.closest('details').open = true; });
  const [rec] = await Promise.all([logPage.waitForEvent('download'), recLink.click()]);
  const cast = readFileSync(await rec.path(), 'utf8').split('\n');
  let header = {};
  try { header = JSON.parse(cast[0]); } catch { /* checked below */ }
  check('log.recording', header.version === 2 && cast.some((l) => l.includes('hi-from-ui')), cast[0].slice(0, 80) + ' … ' + cast.length + ' lines');

  // A web server in the sandbox, started as a background process through
  // the API (as the page would call it): the Processes table lists it, and
  // a preview URL of its port opens it in the browser until revoked.
  const startStatus = await page.evaluate(async (id) => {
    const { csrf_token: csrf } = await (await fetch('/ui/session')).json();
    const r = await fetch('/ui/api/v1/sandboxes/' + id + '/processes', {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
      body: JSON.stringify({ command: 'cd /workspace && exec python3 -m http.server 8000 --bind 127.0.0.1' }),
    });
    return r.status;
  }, id);
  await page.reload();
  await page.waitForSelector('[data-page=sandbox]');
  await page.waitForSelector('td:text-matches("http\\.server")', { timeout: 60000 }).catch(() => {});
  check('processes.listed', startStatus === 201 && await page.locator('td', { hasText: 'http.server' }).count() === 1, 'start ' + startStatus);
  await page.fill('input[name=port]', '8000');
  await page.click('button:text("Preview")');
  const previewLink = page.locator('a.preview-link');
  await previewLink.waitFor({ timeout: 60000 });
  const previewURL = await previewLink.getAttribute('href');
  await page.waitForSelector('tr[data-port="8000"]');
  await screenshot(page, 'sandbox-previews');
  const visitor = await browser.newContext(); // another origin: kept out of the console's checks
  const vp = await visitor.newPage();
  let listing = '';
  // Until the sandbox's web server answers: python's start takes seconds on
  // a loaded machine.
  for (const end = Date.now() + 60000; Date.now() < end && !listing.includes('ui-e2e.bin');) {
    const resp = await vp.goto(previewURL).catch(() => null);
    listing = resp && resp.ok() ? await vp.content() : '';
    if (!listing.includes('ui-e2e.bin')) await vp.waitForTimeout(250);
  }
  check('preview.open', listing.includes('ui-e2e.bin'), new URL(previewURL).host + ' ' + listing.slice(0, 80));
  await page.click('tr[data-port="8000"] button:text("Revoke")');
  await page.waitForSelector('tr[data-port="8000"]', { state: 'detached' });
  const afterRevoke = await vp.reload().then((r) => r.status()).catch((e) => String(e));
  check('preview.revoke', afterRevoke === 401, afterRevoke);
  await visitor.close();

  // Fork it (the child is destroyed from its own page), then pause and
  // resume it: a paused sandbox offers only Resume, its log and Destroy.
  await page.click('button:text("Fork")');
  const childLink = page.locator('[data-page=sandbox] .status a');
  await childLink.waitFor({ timeout: 60000 });
  const childID = (await childLink.getAttribute('href')).split('/').pop();
  check('fork', /^[0-9a-f-]{36}$/.test(childID) && childID !== id, childID);
  await childLink.click();
  await page.waitForFunction((c) => document.querySelector('[data-page=sandbox] h1')?.textContent.includes(c.slice(0, 8)), childID);
  await page.click('[data-page=sandbox] .actions button:text("Destroy")');
  await page.waitForSelector('dialog.confirm[open]');
  await page.click('dialog.confirm button.danger');
  await page.waitForSelector('[data-page=sandboxes]');
  const childStatus = await page.evaluate(async (c) => (await (await fetch('/ui/api/v1/sandboxes/' + c)).json()).status, childID);
  check('fork.destroy', childStatus === 'destroyed', childStatus);
  await page.goto(base + '/ui/sandboxes/' + id);
  await page.waitForSelector('[data-page=sandbox]');
  await page.click('button:text("Pause")');
  await page.waitForSelector('[data-page=sandbox] .badge.paused', { timeout: 60000 });
  const pausedButtons = await page.locator('[data-page=sandbox] .actions button, [data-page=sandbox] .actions a').allTextContents();
  check('pause', JSON.stringify(pausedButtons) === JSON.stringify(['Resume', 'Audit log', 'Destroy']) &&
    await page.locator('#upload').count() === 0, pausedButtons.join(', '));
  await screenshot(page, 'sandbox-paused');
  await page.goto(base + '/ui/sandboxes/' + id + '/terminal');
  await page.waitForSelector('[data-page=terminal] .status');
  check('pause.no-terminal', await page.locator('#terminal').count() === 0 &&
    /is paused/.test(await page.locator('[data-page=terminal] .status').textContent()), await page.locator('main').textContent());
  await page.click('[data-page=terminal] .status a');
  await page.waitForSelector('[data-page=sandbox] .badge.paused');
  await page.click('button:text("Resume")');
  await page.waitForSelector('[data-page=sandbox] .badge.active', { timeout: 60000 });
  await page.waitForSelector('a[aria-label="Download ui-e2e.bin"]', { timeout: 60000 });
  check('resume', true);

  // Every other page renders (a screenshot of each).
  for (const name of ['snapshots', 'secrets', 'keys', 'ssh-keys', 'images', 'volumes']) {
    await page.goto(base + '/ui/' + name);
    await page.waitForSelector('[data-page=' + name + '], section.error', { timeout: 60000 });
    check('page.' + name, await page.locator('[data-page=' + name + ']').count() === 1, await page.locator('main').textContent());
    await screenshot(page, name);
  }

  // The API keys page: a new key's expiry is chosen from a select (30
  // days unless changed, as GitHub's token page), and shown in the list;
  // a key the server says expired is marked so.
  await page.goto(base + '/ui/keys');
  await page.waitForSelector('[data-page=keys] select[name=expires]');
  const lifetime = await page.locator('[data-page=keys] select[name=expires]').inputValue();
  check('keys.default-expiry', lifetime === String(30 * 86400), lifetime);
  await page.fill('[data-page=keys] form input[type=text]', 'e2e-week');
  await page.selectOption('[data-page=keys] select[name=expires]', String(7 * 86400));
  await page.click('[data-page=keys] form button[type=submit]');
  await page.waitForSelector('[data-page=keys] .secret:not([hidden]) code');
  const week = await page.evaluate(async () => (await (await fetch('/ui/api/v1/api-keys')).json()).find((k) => k.name === 'e2e-week'));
  const weekRow = page.locator('[data-page=keys] tr[data-key="' + week.id + '"]');
  await weekRow.waitFor();
  const weekLeft = week.expires_at ? new Date(week.expires_at).getTime() - Date.now() : 0;
  check('keys.create-expiry', !week.expired && Math.abs(weekLeft - 7 * 86400e3) < 3600e3 && /in (6\.9|7\.0) d/.test(await weekRow.textContent()),
    JSON.stringify(week) + ' ' + await weekRow.textContent());
  await screenshot(page, 'keys-created');
  await page.route('**/ui/api/v1/api-keys', async (route) => {
    if (route.request().method() !== 'GET') return route.continue();
    const resp = await route.fetch();
    const keys = await resp.json();
    const past = new Date(Date.now() - 2 * 3600e3).toISOString();
    keys.push({ id: 'e2e-expired', name: 'e2e-expired', prefix: 'bxk_live_e2eexpir', role: 'member', created_at: past,
      revoked_at: null, last_used_at: null, expires_at: past, expired: true });
    await route.fulfill({ response: resp, json: keys });
  });
  await page.goto(base + '/ui/keys');
  const expiredRow = page.locator('[data-page=keys] tr[data-key=e2e-expired]');
  await expiredRow.waitFor();
  check('keys.expired-marked', (await expiredRow.getAttribute('class')) === 'expired' &&
    /expired\s*2\.0 h ago/.test(await expiredRow.textContent()), await expiredRow.textContent());
  await screenshot(page, 'keys-expired');
  await page.unroute('**/ui/api/v1/api-keys');

  // Another account's sandbox is the not-found page, on every page of it.
  for (const suffix of ['', '/log', '/terminal']) {
    await page.goto(base + '/ui/sandboxes/' + cfg.otherSandbox + suffix);
    await page.waitForSelector('[data-page=notfound]', { timeout: 60000 });
    check('notfound.other-account' + (suffix || '/'), true);
  }
  await screenshot(page, 'not-found');

  // Phone width and the dark scheme: nothing overflows sideways.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', storageState: await ctx.storageState() });
  await phone.addInitScript(cspProbe);
  const pp = await phone.newPage();
  watch(pp);
  for (const [path, name] of [['/ui/', 'sandboxes'], ['/ui/sandboxes/' + id, 'sandbox'], ['/ui/sandboxes/' + id + '/terminal', 'terminal']]) {
    await pp.goto(base + path);
    await pp.waitForSelector('[data-page=' + name + ']');
    if (name === 'terminal') await pp.waitForSelector('#terminal[data-state=open]', { timeout: 30000 });
    const overflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check('phone.' + name + '.no-overflow', overflow <= 0, overflow + ' px');
    await screenshot(pp, 'phone-dark-' + name);
  }
  const bg = await pp.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const lightBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check('color-scheme', bg !== lightBg, 'dark ' + bg + ', light ' + lightBg);
  await collectCSP(pp);
  await phone.close();

  // Signing out (in another tab) ends the terminal session.
  await page.goto(base + '/ui/sandboxes/' + id + '/terminal');
  await page.waitForSelector('#terminal[data-state=open]', { timeout: 30000 });
  await collectCSP(page);
  await logPage.click('#signout');
  await logPage.waitForSelector('[data-page=signin]');
  await page.waitForSelector('#terminal[data-state=closed]', { timeout: 60000 });
  check('signout.ends-terminal', true);
  await page.waitForFunction(() => /signed out/.test(document.querySelector('[data-page=terminal] .status').textContent), null, { timeout: 60000 });
  await screenshot(page, 'terminal-signed-out');
  const old = await page.evaluate(async () => (await fetch('/ui/api/v1/sandboxes')).status);
  check('signout.cookie-dead', old === 401, old);

  // Sign in again and destroy the sandbox, with confirmation.
  await page.goto(base + '/ui/signin');
  await page.fill('input[name=email]', cfg.email);
  await page.fill('input[name=password]', cfg.password);
  await page.click('button:text("Sign in")');
  await page.waitForSelector('[data-page=sandboxes]');
  const row2 = page.locator('tr', { hasText: 'ui-e2e' });
  await row2.locator('button:text("Destroy")').click();
  await page.waitForSelector('dialog.confirm[open]');
  check('destroy.confirm-focus', await page.evaluate(() => document.activeElement.textContent === 'Cancel'));
  // The label is isolated from the question around it (a right-to-left
  // override in it would turn the rest of the question backwards).
  const question = await page.locator('dialog.confirm p').textContent();
  check('destroy.confirm-isolated', question.includes('\u2068ui-e2e\u2069?'), JSON.stringify(question));
  await screenshot(page, 'destroy-confirm');
  await page.click('dialog.confirm button.danger');
  await row2.waitFor({ state: 'detached', timeout: 30000 });
  const status = await page.evaluate(async (id) => (await (await fetch('/ui/api/v1/sandboxes/' + id)).json()).status, id);
  check('destroy', status === 'destroyed', status);
  await screenshot(page, 'sandboxes-after-destroy');

  // The list fetches destroyed sandboxes only when asked to show them.
  const lists = [];
  const onList = (r) => { if (new URL(r.url()).pathname === '/ui/api/v1/sandboxes') lists.push(new URL(r.url()).search); };
  page.on('request', onList);
  await page.reload();
  await page.waitForSelector('[data-page=sandboxes]');
  await page.check('#show-gone');
  const gone = page.locator('tr[data-id="' + id + '"]');
  await gone.waitFor({ timeout: 30000 });
  page.off('request', onList);
  check('list.active-only', lists[0] === '?active_only=true' && lists.includes(''), JSON.stringify(lists));
  check('list.show-destroyed', (await gone.textContent()).includes('destroyed'), await gone.textContent());
  await collectCSP(page);
  await collectCSP(logPage);

  check('no-third-party-origins', foreign.length === 0, foreign.join(' '));
  check('no-csp-violations', violations.length === 0, violations.join('; '));
  check('no-script-errors', errors.length === 0, errors.join('; '));
  writeFileSync(join(cfg.artifacts, 'sandbox-id.txt'), id);
  report({ done: true });
} catch (e) {
  report({ error: String(e && e.stack || e) });
  let n = 0;
  for (const c of browser.contexts()) {
    for (const p of c.pages()) await screenshot(p, 'failure-' + ++n).catch(() => {});
  }
  report({ check: 'errors-so-far', ok: errors.length === 0, detail: errors.join('; ') + ' | csp ' + violations.join('; ') });
  process.exitCode = 1;
} finally {
  await browser.close();
}
