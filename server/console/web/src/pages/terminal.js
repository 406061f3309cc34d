import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { h, replace } from '../dom.js';
import { call, raw, apiURL } from '../api.js';

// terminalPage is a sandbox's terminal: the API's takeover WebSocket in
// xterm.js. Binary frames are terminal bytes both ways; a text frame
// resizes. Read-only mode attaches with read_only=1, so the server drops
// whatever is typed, and the terminal takes no input either.
export async function terminalPage(main, [id]) {
  const sb = await call('GET', '/v1/sandboxes/' + id); // 404 → not found page
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '/ui/', 'data-link': true }, 'Sandboxes'), ' / ',
    h('a', { href: '/ui/sandboxes/' + id, 'data-link': true }, h('bdi', {}, sb.label || sb.id.slice(0, 8))), ' / terminal');
  if (sb.status !== 'active') { // nothing runs to attach to
    replace(main, h('section', { 'data-page': 'terminal', class: 'wide' }, crumbs, h('h1', {}, 'Terminal'),
      h('p', { class: 'status', role: 'status' }, 'This sandbox is ' + sb.status + ', so it has no terminal. ',
        sb.status === 'paused' ? ['Resume it on ', h('a', { href: '/ui/sandboxes/' + id, 'data-link': true }, 'its page'), '.'] : null)));
    return;
  }
  const q = new URLSearchParams(location.search);
  let readOnly = q.get('read_only') === '1';
  const box = h('div', { class: 'term', id: 'terminal' });
  const state = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' }, 'Connecting…');
  const ro = h('input', { type: 'checkbox', id: 'read-only', checked: readOnly });
  const reconnect = h('button', { type: 'button', class: 'secondary', hidden: true, onclick: () => connect() }, 'Reconnect');
  replace(main, h('section', { 'data-page': 'terminal', class: 'wide' }, crumbs,
    h('div', { class: 'toolbar' }, h('h1', {}, 'Terminal'),
      h('label', { for: 'read-only', class: 'check' }, ro, ' Read-only (watch without typing)'), reconnect,
      h('a', { href: '/ui/sandboxes/' + id + '/log', 'data-link': true, class: 'button secondary' }, 'Audit log')),
    state, box,
    h('p', { class: 'hint' }, 'What you type is in the sandbox\'s audit log. Press Escape, then Tab or Shift+Tab, to move the focus out of the terminal.')));

  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  const term = new Terminal({
    convertEol: false, cursorBlink: true, disableStdin: readOnly, scrollback: 5000,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace', fontSize: 14,
    theme: theme(dark.matches), screenReaderMode: false,
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  const onScheme = () => { term.options.theme = theme(dark.matches); };
  dark.addEventListener('change', onScheme);
  // Escape, then Tab, leaves the terminal (xterm keeps Tab for the shell).
  let escaped = false;
  term.attachCustomKeyEventHandler((ev) => {
    if (ev.type !== 'keydown' || ['Shift', 'Control', 'Alt', 'Meta'].includes(ev.key)) return true;
    if (ev.key === 'Tab' && escaped) { escaped = false; return false; }
    escaped = ev.key === 'Escape';
    return true;
  });

  let ws = null;
  let closedByUs = false;
  const enc = new TextEncoder();
  // send types bytes into the terminal, in frames of at most maxFrame: the
  // server takes a frame of at most 1 MiB and ends the session on a
  // bigger one, and xterm.js hands over a paste as one piece.
  function send(bytes) {
    if (!ws || ws.readyState !== WebSocket.OPEN || readOnly) return;
    for (let i = 0; i < bytes.length; i += maxFrame) ws.send(bytes.subarray(i, i + maxFrame));
  }
  function sendSize() {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
  }
  term.onData((d) => send(enc.encode(d)));
  // A binary event's string holds one byte per character (mouse reports
  // past column 95 in X10's encoding), which is not text to encode.
  term.onBinary((d) => send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
  term.onResize(sendSize);

  function connect() {
    if (ws) { closedByUs = true; ws.close(); }
    closedByUs = false;
    reconnect.hidden = true;
    const u = new URL(apiURL('/v1/sandboxes/' + id + '/takeover'), location.href);
    u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    if (readOnly) u.searchParams.set('read_only', '1');
    const sock = new WebSocket(u);
    sock.binaryType = 'arraybuffer';
    ws = sock;
    state.textContent = 'Connecting…';
    sock.onopen = () => {
      state.textContent = readOnly ? 'Watching (read-only).' : 'Connected.';
      box.dataset.state = 'open';
      sendSize();
      if (!readOnly) term.focus();
    };
    sock.onmessage = (m) => {
      if (typeof m.data === 'string') return; // control messages from the server are not shown
      term.write(new Uint8Array(m.data));
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return;
      box.dataset.state = 'closed';
      if (closedByUs) return;
      state.textContent = 'The terminal session ended' + (ev.reason ? ': ' + ev.reason : '') + '.';
      reconnect.hidden = false;
      // Ended by a sign-out (here or in another tab)? Then say so.
      raw('GET', '/ui/session', undefined, { onSignedOut: false }).catch((e) => {
        if (e.status !== 401) return;
        reconnect.hidden = true;
        replace(state, 'The terminal session ended: you are signed out. ', h('a', { href: '/ui/signin?next=' + encodeURIComponent(location.pathname), 'data-link': true }, 'Sign in again'));
      });
    };
  }
  ro.addEventListener('change', () => {
    readOnly = ro.checked;
    term.options.disableStdin = readOnly;
    const u = new URL(location.href);
    if (readOnly) u.searchParams.set('read_only', '1'); else u.searchParams.delete('read_only');
    history.replaceState(null, '', u);
    connect();
  });
  const onWin = () => fit.fit();
  window.addEventListener('resize', onWin);
  connect();
  return () => {
    closedByUs = true;
    if (ws) ws.close();
    window.removeEventListener('resize', onWin);
    dark.removeEventListener('change', onScheme);
    term.dispose();
  };
}

// maxFrame bounds one frame of typed bytes (the server's limit is 1 MiB).
const maxFrame = 64 << 10;

function theme(dark) {
  return dark
    ? { background: '#101418', foreground: '#d8dee9', cursor: '#d8dee9', selectionBackground: '#3b4252' }
    : { background: '#fbfbfa', foreground: '#1d2228', cursor: '#1d2228', selectionBackground: '#c8d3e0' };
}
