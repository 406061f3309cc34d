import { h, replace, field, fmtTime, fmtRel, fmtBytes, confirmDialog } from '../dom.js';
import { call } from '../api.js';

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
      if (!await confirmDialog('Delete image ' + (im.label || im.id.slice(0, 8)) + '?', 'Delete')) return;
      try { await call('DELETE', '/v1/images/' + im.id); status.textContent = 'Deleted.'; } catch (e) { status.textContent = e.message; }
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
        if (!await confirmDialog('Delete volume ' + (v.label || v.id.slice(0, 8)) + '? Its data is lost.', 'Delete')) return;
        try { await call('DELETE', '/v1/volumes/' + v.id); await load(); } catch (e) { status.textContent = e.message; }
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
    } catch (err) { status.textContent = err.message + (err.hint ? ' — ' + err.hint : ''); }
  } }, field('Label', label), field('Size (GB)', size), h('button', { type: 'submit' }, 'Create volume'));
  await load();
  replace(main, h('section', { 'data-page': 'volumes' }, h('h1', {}, 'Volumes'), form, status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Volume', 'Label', 'Size', 'Status', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}
