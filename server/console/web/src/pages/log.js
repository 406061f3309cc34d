import { h, replace, fmtTime } from '../dom.js';
import { call, apiURL } from '../api.js';

// logPage is a sandbox's audit log, live: the API's watch stream (server-
// sent events) replays the newest entries and pushes each new one. An
// entry opens to show its whole detail, as in the TUI.
export async function logPage(main, [id]) {
  const sb = await call('GET', '/v1/sandboxes/' + id); // 404 → not found page
  const list = h('ol', { class: 'log', 'aria-live': 'polite', 'aria-label': 'Audit entries, newest last' });
  const state = h('p', { class: 'status', role: 'status' }, 'Connecting…');
  const filter = h('input', { type: 'search', placeholder: 'Filter: operation, command, source', 'aria-label': 'Filter entries' });
  const seen = new Set();

  function summary(e) {
    const d = e.detail || {};
    for (const k of ['command', 'code', 'path', 'pattern', 'process_id', 'input']) {
      if (typeof d[k] === 'string' && d[k]) return d[k].replace(/\s+/g, ' ').trim();
    }
    return '';
  }
  // A takeover's screen, when the server records them (docs/bastion.md):
  // its takeover_end entry names the asciicast to download.
  function recording(e) {
    const rid = e.operation === 'takeover_end' && e.detail && e.detail.recording_id;
    if (typeof rid !== 'string' || !/^[A-Za-z0-9_-]{1,100}$/.test(rid)) return null;
    return h('p', {}, h('a', {
      href: apiURL('/v1/sandboxes/' + id + '/takeover-recordings/' + rid), download: 'takeover-' + rid + '.cast', class: 'recording',
    }, 'Download the recording'), ' (asciicast v2, ' + (e.detail.recording_bytes ?? '?') + ' bytes' + (e.detail.recording_truncated ? ', truncated' : '') + ')');
  }
  function add(e) {
    if (seen.has(e.id)) return;
    seen.add(e.id);
    const text = [e.operation, e.source, summary(e)].join(' ').toLowerCase();
    // data-received: when the entry reached this page (the browser's clock).
    const li = h('li', { class: 'entry ' + e.source, dataset: { op: e.operation, text, received: String(Date.now()) } },
      h('details', {},
        h('summary', {},
          h('span', { class: 'seq' }, '#' + (e.seq ?? '')), ' ',
          h('time', { datetime: e.started_at }, fmtTime(e.started_at)), ' ',
          h('span', { class: 'op' }, e.operation), ' ',
          h('span', { class: 'src' }, e.source), ' ',
          h('code', { class: 'sum' }, summary(e)), ' ',
          e.exit_code !== null && e.exit_code !== undefined ? h('span', { class: 'exit ' + (e.exit_code === 0 ? 'ok' : 'bad') }, 'exit ' + e.exit_code) : null,
          h('span', { class: 'dur' }, e.duration_ms + ' ms')),
        h('pre', { class: 'detail' }, JSON.stringify(e.detail, null, 2)),
        recording(e),
        h('p', { class: 'hash' }, 'row hash ', h('code', {}, e.row_hash))));
    li.hidden = !matches(li);
    list.appendChild(li);
    if (stick) li.scrollIntoView({ block: 'nearest' });
  }
  function matches(li) {
    const f = filter.value.trim().toLowerCase();
    return !f || li.dataset.text.includes(f);
  }
  filter.addEventListener('input', () => { for (const li of list.children) li.hidden = !matches(li); });
  let stick = true;
  window.addEventListener('scroll', onScroll);
  function onScroll() { stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40; }

  const es = new EventSource(apiURL('/v1/sandboxes/' + id + '/watch'));
  es.onopen = () => { state.textContent = 'Live: new entries appear as they are written.'; };
  es.onmessage = (m) => { try { add(JSON.parse(m.data)); } catch { /* not an entry */ } };
  es.onerror = () => { state.textContent = 'Disconnected; reconnecting…'; };

  replace(main, h('section', { 'data-page': 'log' },
    h('p', { class: 'crumbs' }, h('a', { href: '/ui/', 'data-link': true }, 'Sandboxes'), ' / ',
      h('a', { href: '/ui/sandboxes/' + id, 'data-link': true }, h('bdi', {}, sb.label || sb.id.slice(0, 8))), ' / audit log'),
    h('h1', {}, 'Audit log'), state, h('div', { class: 'toolbar' }, filter), list));
  return () => { es.close(); window.removeEventListener('scroll', onScroll); };
}
