import { h, replace, field, fmtRel, fmtTime, confirmDialog, iso } from '../dom.js';
import { call, errText, extend as extendBy } from '../api.js';

const sizes = ['small', 'medium', 'large'];

// sandboxesPage lists the account's sandboxes (filter, sort), and creates,
// extends, resumes and destroys them.
export async function sandboxesPage(main, _params, ctx) {
  const showGone = h('input', { type: 'checkbox', id: 'show-gone' });
  // Destroyed sandboxes are fetched only when shown: an account keeps
  // every one it ever had, and the list is fetched again every 10 s.
  const list = () => call('GET', showGone.checked ? '/v1/sandboxes' : '/v1/sandboxes?active_only=true');
  let all = await list();
  const q = new URLSearchParams(location.search);
  const filter = h('input', { type: 'search', placeholder: 'id, label or status', value: q.get('q') || '', 'aria-label': 'Filter sandboxes' });
  const sortBy = h('select', { 'aria-label': 'Sort by' },
    h('option', { value: 'created' }, 'Newest first'), h('option', { value: 'expires' }, 'Expiring first'),
    h('option', { value: 'label' }, 'Label'), h('option', { value: 'status' }, 'Status'));
  const tbody = h('tbody');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });

  // Only the newest fetch is drawn: the 10 s refresh may cross a toggle.
  let fetches = 0;
  async function refresh() {
    const n = ++fetches;
    const got = await list();
    if (n !== fetches) return;
    all = got;
    draw();
  }

  function draw() {
    const f = filter.value.trim().toLowerCase();
    let rows = all.filter((s) => showGone.checked || !s.destroyed_at);
    if (f) rows = rows.filter((s) => [s.id, s.label, s.status, s.size].some((v) => (v || '').toLowerCase().includes(f)));
    const cmp = {
      created: (a, b) => b.created_at.localeCompare(a.created_at),
      expires: (a, b) => a.expires_at.localeCompare(b.expires_at),
      label: (a, b) => (a.label || '').localeCompare(b.label || ''),
      status: (a, b) => a.status.localeCompare(b.status),
    }[sortBy.value];
    rows.sort(cmp);
    replace(tbody, rows.length ? rows.map(row) : h('tr', {}, h('td', { colspan: 6, class: 'empty' },
      all.length ? 'No sandbox matches.' : showGone.checked ? 'No sandboxes yet. Create one above.' : 'No active sandboxes. Create one above.')));
  }

  function row(s) {
    const active = !s.destroyed_at;
    return h('tr', { dataset: { id: s.id } },
      h('td', {}, h('a', { href: '/ui/sandboxes/' + s.id, 'data-link': true, class: 'mono' }, s.id.slice(0, 8)),
        s.label ? h('span', { class: 'label' }, ' ', h('bdi', {}, s.label)) : null),
      h('td', {}, h('span', { class: 'badge ' + s.status }, s.status)),
      h('td', { class: 'wide-only' }, s.size),
      h('td', { class: 'wide-only', title: fmtTime(s.created_at) }, fmtRel(s.created_at)),
      h('td', { title: fmtTime(s.expires_at) }, active ? fmtRel(s.expires_at) : s.destroy_reason || 'gone'),
      h('td', { class: 'actions' }, s.status === 'active' ? [
        h('a', { href: '/ui/sandboxes/' + s.id + '/terminal', 'data-link': true, class: 'button secondary' }, 'Terminal'),
        h('button', { type: 'button', class: 'secondary', onclick: () => extend(s) }, 'Extend'),
        h('button', { type: 'button', class: 'danger', onclick: () => destroy(s) }, 'Destroy'),
      ] : s.status === 'paused' ? [
        h('button', { type: 'button', class: 'secondary', onclick: () => resume(s) }, 'Resume'),
        h('button', { type: 'button', class: 'danger', onclick: () => destroy(s) }, 'Destroy'),
      ] : null));
  }

  async function extend(s) {
    try {
      await extendBy(s, 30);
      status.textContent = 'Extended ' + s.id.slice(0, 8) + ' by 30 minutes.';
      await refresh();
    } catch (e) { status.textContent = errText(e); }
  }

  async function resume(s) {
    try {
      status.textContent = 'Resuming ' + s.id.slice(0, 8) + '…';
      await call('POST', '/v1/sandboxes/' + s.id + '/resume');
      status.textContent = 'Resumed ' + s.id.slice(0, 8) + '.';
      await refresh();
    } catch (e) { status.textContent = errText(e); }
  }

  async function destroy(s) {
    if (!await confirmDialog('Destroy sandbox ' + iso(s.label || s.id.slice(0, 8)) + '? Its files are lost.', 'Destroy')) return;
    try {
      await call('DELETE', '/v1/sandboxes/' + s.id);
      status.textContent = 'Destroyed ' + s.id.slice(0, 8) + '.';
      await refresh();
    } catch (e) { status.textContent = errText(e); }
  }

  const label = h('input', { type: 'text', name: 'label', maxlength: 200, placeholder: 'optional' });
  const size = h('select', { name: 'size' }, sizes.map((v) => h('option', { value: v }, v)));
  const lifetime = h('input', { type: 'number', name: 'lifetime', min: 1, value: 30 });
  const createBtn = h('button', { type: 'submit' }, 'Create sandbox');
  const create = h('form', { class: 'inline', 'aria-label': 'Create a sandbox', onsubmit: async (e) => {
    e.preventDefault();
    createBtn.disabled = true;
    status.textContent = 'Creating…';
    try {
      const sb = await call('POST', '/v1/sandboxes', {
        label: label.value.trim() || undefined, size: size.value, lifetime_minutes: Number(lifetime.value) || undefined,
      });
      status.textContent = 'Created ' + sb.id.slice(0, 8) + '.';
      label.value = '';
      await refresh();
    } catch (err) {
      status.textContent = errText(err);
    } finally { createBtn.disabled = false; }
  } }, field('Label', label), field('Size', size), field('Lifetime (min)', lifetime), createBtn);

  filter.addEventListener('input', () => {
    const u = new URL(location.href);
    if (filter.value) u.searchParams.set('q', filter.value); else u.searchParams.delete('q');
    history.replaceState(null, '', u);
    draw();
  });
  showGone.addEventListener('change', () => { refresh().catch((e) => { status.textContent = errText(e); }); });
  sortBy.addEventListener('change', draw);
  draw();
  replace(main, h('section', { 'data-page': 'sandboxes' },
    h('h1', {}, 'Sandboxes'), create, status,
    h('div', { class: 'toolbar' }, filter, sortBy, h('label', { for: 'show-gone', class: 'check' }, showGone, ' Show destroyed')),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Sandbox', 'Status', 'Size', 'Created', 'Expires', ''].map((t) => h('th', { scope: 'col', class: t === 'Size' || t === 'Created' ? 'wide-only' : null }, t)))),
      tbody))));
  const timer = setInterval(() => { refresh().catch(() => {}); }, 10000);
  void ctx;
  return () => clearInterval(timer);
}
