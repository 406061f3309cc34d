import { h, replace, field, fmtTime, fmtRel, fmtBytes, confirmDialog, iso } from '../dom.js';
import { call, errText } from '../api.js';

// imagesPage lists the account's sandbox images (building one is the
// CLI's: `boxkite images build`).
export async function imagesPage(main) {
  let images;
  try {
    images = await call('GET', '/v1/images');
  } catch (e) {
    if (e.status !== 404 && e.code !== 'not_supported') throw e;
    replace(main, h('section', { 'data-page': 'images' }, h('h1', {}, 'Images'), h('p', {}, 'This server has no image store.')));
    return;
  }
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const tbody = h('tbody', {}, images.length ? images.map((im) => h('tr', {},
    h('td', { class: 'mono' }, im.id.slice(0, 8)), h('td', {}, im.label || '—'), h('td', {}, h('span', { class: 'badge ' + im.status }, im.status)),
    h('td', {}, im.source), h('td', {}, fmtBytes(im.size_bytes)), h('td', { title: fmtTime(im.created_at) }, fmtRel(im.created_at)),
    h('td', { class: 'actions' }, h('button', { type: 'button', class: 'danger', onclick: async () => {
      if (!await confirmDialog('Delete image ' + iso(im.label || im.id.slice(0, 8)) + '?', 'Delete')) return;
      try { await call('DELETE', '/v1/images/' + im.id); status.textContent = 'Deleted.'; } catch (e) { status.textContent = errText(e); }
    } }, 'Delete')))) : h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No images. `boxkite images build` makes one.')));
  replace(main, h('section', { 'data-page': 'images' }, h('h1', {}, 'Images'), status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Image', 'Label', 'Status', 'Source', 'Size', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}

// volumesPage lists, creates and deletes the account's volumes.
export async function volumesPage(main) {
  const tbody = h('tbody');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  async function load() {
    const vols = await call('GET', '/v1/volumes');
    replace(tbody, vols.length ? vols.map((v) => h('tr', {},
      h('td', { class: 'mono' }, v.id.slice(0, 8)), h('td', {}, v.label || '—'), h('td', {}, v.size_gb + ' GB'),
      h('td', {}, v.status), h('td', { title: fmtTime(v.created_at) }, fmtRel(v.created_at)),
      h('td', { class: 'actions' }, h('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!await confirmDialog('Delete volume ' + iso(v.label || v.id.slice(0, 8)) + '? Its data is lost.', 'Delete')) return;
        try { await call('DELETE', '/v1/volumes/' + v.id); await load(); } catch (e) { status.textContent = errText(e); }
      } }, 'Delete')))) : h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No volumes.')));
  }
  const label = h('input', { type: 'text', maxlength: 200, placeholder: 'optional' });
  const size = h('input', { type: 'number', min: 1, value: 1 });
  const form = h('form', { class: 'inline', onsubmit: async (e) => {
    e.preventDefault();
    try {
      await call('POST', '/v1/volumes', { label: label.value.trim() || undefined, size_gb: Number(size.value) || undefined });
      label.value = '';
      status.textContent = 'Created.';
      await load();
    } catch (err) { status.textContent = errText(err); }
  } }, field('Label', label), field('Size (GB)', size), h('button', { type: 'submit' }, 'Create volume'));
  await load();
  replace(main, h('section', { 'data-page': 'volumes' }, h('h1', {}, 'Volumes'), form, status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Volume', 'Label', 'Size', 'Status', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}

// snapshotsPage lists the account's snapshots; one restores into a new
// sandbox, or is deleted. A sandbox's page takes them.
export async function snapshotsPage(main, _params, ctx) {
  let snaps;
  try {
    snaps = await call('GET', '/v1/snapshots');
  } catch (e) {
    if (e.status !== 404 && e.code !== 'not_supported') throw e;
    replace(main, h('section', { 'data-page': 'snapshots' }, h('h1', {}, 'Snapshots'), h('p', {}, 'This server does not keep snapshots.')));
    return;
  }
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const live = snaps.filter((s) => !s.deleted_at);
  const tbody = h('tbody', {}, live.length ? live.map((s) => h('tr', {},
    h('td', { class: 'mono' }, s.id.slice(0, 8)), h('td', {}, s.label || '—'),
    h('td', {}, h('a', { href: '/ui/sandboxes/' + s.session_id, 'data-link': true, class: 'mono' }, s.session_id.slice(0, 8))),
    h('td', {}, h('span', { class: 'badge ' + s.status }, s.status)), h('td', {}, fmtBytes(s.size_bytes)),
    h('td', { title: fmtTime(s.created_at) }, fmtRel(s.created_at)),
    h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: async () => {
        try {
          const sb = await call('POST', '/v1/snapshots/' + s.id + '/restore', { label: s.label || undefined });
          ctx.navigate('/ui/sandboxes/' + sb.id);
        } catch (e) { status.textContent = errText(e); }
      } }, 'Restore'),
      h('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!await confirmDialog('Delete snapshot ' + iso(s.label || s.id.slice(0, 8)) + '?', 'Delete')) return;
        try { await call('DELETE', '/v1/snapshots/' + s.id); ctx.navigate(location.pathname, true); } catch (e) { status.textContent = errText(e); }
      } }, 'Delete'))))
    : h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No snapshots. A sandbox\'s page takes one.')));
  replace(main, h('section', { 'data-page': 'snapshots' }, h('h1', {}, 'Snapshots'), status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Snapshot', 'Label', 'Of sandbox', 'Status', 'Size', 'Taken', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}

// secretsPage lists the account's secrets by name (values are write-only),
// and creates, replaces and deletes them.
export async function secretsPage(main) {
  const tbody = h('tbody');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  async function load() {
    const list = await call('GET', '/v1/secrets');
    replace(tbody, list.length ? list.map((s) => h('tr', {},
      h('td', { class: 'mono' }, s.name), h('td', {}, (s.allowed_hosts || []).join(', ')),
      h('td', { title: fmtTime(s.updated_at) }, fmtRel(s.updated_at)),
      h('td', {}, s.last_used_at ? fmtRel(s.last_used_at) : 'never'),
      h('td', { class: 'actions' }, h('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!await confirmDialog('Delete secret ' + iso(s.name) + '?', 'Delete')) return;
        try { await call('DELETE', '/v1/secrets/' + encodeURIComponent(s.id)); await load(); } catch (e) { status.textContent = errText(e); }
      } }, 'Delete')))) : h('tr', {}, h('td', { colspan: 5, class: 'empty' }, 'No secrets.')));
  }
  const name = h('input', { type: 'text', required: true, maxlength: 200, class: 'mono', autocomplete: 'off' });
  const value = h('input', { type: 'password', required: true, autocomplete: 'new-password' });
  const hosts = h('input', { type: 'text', required: true, placeholder: 'api.example.com, other.example.com' });
  const form = h('form', { class: 'inline', onsubmit: async (e) => {
    e.preventDefault();
    const body = { name: name.value.trim(), value: value.value, allowed_hosts: hosts.value.split(/[\s,]+/).filter(Boolean) };
    try {
      await call('POST', '/v1/secrets', body);
      status.textContent = 'Created ' + iso(body.name) + '.';
    } catch (err) {
      if (err.status !== 409) { status.textContent = errText(err); return; }
      if (!await confirmDialog('A secret named ' + iso(body.name) + ' exists. Replace its value?', 'Replace')) return;
      try {
        await call('PUT', '/v1/secrets/' + encodeURIComponent(body.name), { value: body.value, allowed_hosts: body.allowed_hosts });
        status.textContent = 'Replaced ' + iso(body.name) + '.';
      } catch (err2) { status.textContent = errText(err2); return; }
    }
    name.value = ''; value.value = ''; hosts.value = '';
    await load();
  } }, field('Name', name), field('Value', value, 'write-only: never shown again'), field('Allowed hosts', hosts), h('button', { type: 'submit' }, 'Save secret'));
  try {
    await load();
  } catch (e) {
    if (e.status === 401) throw e;
    // A server without a secrets key says so (503), with what to do.
    replace(main, h('section', { 'data-page': 'secrets' }, h('h1', {}, 'Secrets'), h('p', {}, e.message), e.hint ? h('p', { class: 'hint' }, e.hint) : null));
    return;
  }
  replace(main, h('section', { 'data-page': 'secrets' }, h('h1', {}, 'Secrets'), form, status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Name', 'Allowed hosts', 'Updated', 'Last used', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}
