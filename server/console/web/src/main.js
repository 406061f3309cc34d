// The boxkite console: one page, routed on its path under /ui/.
import { h, replace, allowStyles } from './dom.js';
import { raw, setCSRF, APIError } from './api.js';
import { signinPage } from './pages/signin.js';
import { sandboxesPage } from './pages/sandboxes.js';
import { sandboxPage } from './pages/sandbox.js';
import { logPage } from './pages/log.js';
import { terminalPage } from './pages/terminal.js';
import { keysPage, sshKeysPage } from './pages/keys.js';
import { imagesPage, volumesPage, snapshotsPage, secretsPage } from './pages/resources.js';

allowStyles(document.currentScript && document.currentScript.nonce);

const state = { session: null, dispose: null };

// routes map a path under /ui/ to a page: a function of (main, params, ctx)
// that fills main and may return a function that ends what it started.
const routes = [
  [/^$/, sandboxesPage, 'Sandboxes'],
  [/^signin$/, signinPage, 'Sign in', { public: true }],
  [/^sandboxes\/([\w-]+)$/, sandboxPage, 'Sandbox'],
  [/^sandboxes\/([\w-]+)\/log$/, logPage, 'Audit log'],
  [/^sandboxes\/([\w-]+)\/terminal$/, terminalPage, 'Terminal'],
  [/^keys$/, keysPage, 'API keys'],
  [/^ssh-keys$/, sshKeysPage, 'SSH keys'],
  [/^images$/, imagesPage, 'Images'],
  [/^volumes$/, volumesPage, 'Volumes'],
  [/^snapshots$/, snapshotsPage, 'Snapshots'],
  [/^secrets$/, secretsPage, 'Secrets'],
];

export function navigate(path, replaceState = false) {
  if (replaceState) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

const ctx = {
  navigate,
  get session() { return state.session; },
  setSession(s) { state.session = s; setCSRF(s ? s.csrf_token : ''); nav(); },
  notFound: (main) => notFound(main),
  signOut,
};

async function loadSession() {
  try {
    ctx.setSession(await raw('GET', '/ui/session', undefined, { onSignedOut: false }));
  } catch (e) {
    if (!(e instanceof APIError) || e.status !== 401) throw e;
    ctx.setSession(null);
  }
}

async function signOut() {
  try {
    await raw('DELETE', '/ui/session', undefined, { onSignedOut: false });
  } catch (e) {
    if (!(e instanceof APIError) || e.status !== 401) {
      // The session's key is still valid: say so, and stay signed in.
      const err = new Error('Signing out failed: ' + e.message);
      err.hint = (e.hint ? e.hint + '. ' : '') + 'You are still signed in; sign out again.';
      err.requestID = e.requestID;
      showError(document.getElementById('main'), err);
      return;
    }
  }
  ctx.setSession(null);
  navigate('/ui/signin');
}

function nav() {
  const top = document.getElementById('top');
  const s = state.session;
  const link = (href, text) => h('a', { href, 'data-link': true }, text);
  replace(top,
    h('a', { class: 'brand', href: '/ui/', 'data-link': true }, 'boxkite'),
    s ? h('nav', { 'aria-label': 'Main' },
      link('/ui/', 'Sandboxes'), link('/ui/snapshots', 'Snapshots'), link('/ui/images', 'Images'),
      link('/ui/volumes', 'Volumes'), link('/ui/secrets', 'Secrets'), link('/ui/keys', 'API keys'), link('/ui/ssh-keys', 'SSH keys')) : null,
    s ? h('div', { class: 'who' },
      // A session of an organization's key acts for the organization,
      // whose account's email is only "org:<id>": name the organization.
      s.organization
        ? h('span', { class: 'email', title: 'Acting for the organization ' + s.organization.id + ' as ' + s.organization.role },
          h('bdi', {}, s.organization.name), ' ', h('span', { class: 'badge' }, 'organization'))
        : h('span', { class: 'email', title: 'Signed in' }, h('bdi', {}, s.email)),
      h('button', { type: 'button', class: 'secondary', id: 'signout', onclick: signOut }, 'Sign out')) : null);
  markCurrent();
}

function markCurrent() {
  for (const a of document.querySelectorAll('#top nav a')) {
    const here = a.getAttribute('href') === location.pathname ||
      (a.getAttribute('href') === '/ui/' && location.pathname.startsWith('/ui/sandboxes'));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

export function notFound(main, what) {
  document.title = 'Not found · boxkite';
  replace(main, h('section', { class: 'notfound', 'data-page': 'notfound' },
    h('h1', {}, 'Not found'),
    h('p', {}, what || 'There is nothing here, or it belongs to another account.'),
    h('p', {}, h('a', { href: '/ui/', 'data-link': true }, 'Back to your sandboxes'))));
}

async function render() {
  if (state.dispose) { try { state.dispose(); } catch { /* already gone */ } state.dispose = null; }
  const main = document.getElementById('main');
  const path = location.pathname.replace(/^\/ui\/?/, '').replace(/\/$/, '');
  let page = null;
  let params = [];
  let opts = {};
  let title = '';
  for (const [re, fn, t, o] of routes) {
    const m = path.match(re);
    if (m) { page = fn; params = m.slice(1); opts = o || {}; title = t; break; }
  }
  if (!opts.public && !state.session) {
    navigate('/ui/signin?next=' + encodeURIComponent(location.pathname), true);
    return;
  }
  markCurrent();
  if (!page) { notFound(main); return; }
  document.title = title + ' · boxkite';
  replace(main, h('p', { class: 'loading' }, 'Loading…'));
  try {
    const d = await page(main, params, ctx);
    if (typeof d === 'function') state.dispose = d;
  } catch (e) {
    if (e instanceof APIError && e.status === 404) { notFound(main); return; }
    showError(main, e);
  }
  // Focus moves to the new page, for keyboards and screen readers,
  // unless the page put it on a control of its own.
  if (!main.contains(document.activeElement) || document.activeElement === main) main.focus({ preventScroll: true });
}

export function showError(main, e) {
  replace(main, h('section', { class: 'error', role: 'alert' },
    h('h1', {}, 'Something went wrong'), h('p', {}, e.message),
    e.hint ? h('p', { class: 'hint' }, e.hint) : null,
    e.requestID ? h('p', { class: 'rid' }, 'Request id: ', h('code', {}, e.requestID)) : null));
}

document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[data-link]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute('href'));
});
window.addEventListener('popstate', render);
window.addEventListener('console:signedout', () => {
  if (!state.session) return;
  ctx.setSession(null);
  navigate('/ui/signin?next=' + encodeURIComponent(location.pathname), true);
});

loadSession().then(render, (e) => showError(document.getElementById('main'), e));
