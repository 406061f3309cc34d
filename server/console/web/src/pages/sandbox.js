import { h, replace, field, fmtRel, fmtTime, fmtBytes, confirmDialog, iso } from '../dom.js';
import { call, apiURL, errText, extend } from '../api.js';

// sandboxPage shows one sandbox: its state and resources, its processes,
// the preview URLs of its ports, and its files, with download and upload; it extends, snapshots, forks,
// pauses, resumes and destroys it.
export async function sandboxPage(main, [id], ctx) {
  const sb = await call('GET', '/v1/sandboxes/' + id);
  const active = !sb.destroyed_at;
  const base = '/v1/sandboxes/' + id;
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const resources = h('dl', { class: 'facts' });
  const processes = h('div', { class: 'table-wrap' });
  const files = h('div', { class: 'files' });

  function facts(dl, pairs) {
    replace(dl, pairs.filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  }
  facts(h('dl'), []);
  const info = h('dl', { class: 'facts' });
  facts(info, [
    ['Id', h('code', {}, sb.id)], ['Label', sb.label || '—'], ['Status', h('span', { class: 'badge ' + sb.status }, sb.status)],
    ['Size', sb.size], ['Created', fmtTime(sb.created_at)],
    ['Paused', sb.paused_at ? fmtTime(sb.paused_at) + ' (' + (sb.paused_with || 'freeze') + '; its lifetime stands still)' : ''],
    [active ? 'Expires' : 'Destroyed', active ? fmtTime(sb.expires_at) + ' (' + fmtRel(sb.expires_at) + ')' : fmtTime(sb.destroyed_at) + ' (' + (sb.destroy_reason || '') + ')'],
  ]);

  async function loadResources() {
    try {
      const st = await call('GET', base + '/stats');
      facts(resources, [['Memory', fmtBytes(st.memory_bytes)], ['Tasks', String(st.pids)],
        ['Disk', st.disk_quota_bytes ? fmtBytes(st.disk_used_bytes) + ' of ' + fmtBytes(st.disk_quota_bytes) : ''],
        ['Frozen', st.frozen ? frozenText(sb.frozen_reason || st.frozen_reason) : '']]);
    } catch (e) { replace(resources, h('p', { class: 'hint' }, errText(e))); }
  }

  // frozenText says which disk ran out (frozen_reason: host_disk or
  // clone_pool); the sandbox thaws by itself once it has room.
  function frozenText(reason) {
    return reason === 'clone_pool'
      ? 'yes (the clone pool that holds the sandboxes\' disks is out of space; it resumes once space is freed in it)'
      : 'yes (the host is out of disk space; it resumes once space is freed)';
  }

  async function loadProcesses() {
    try {
      const pl = await call('GET', base + '/processes');
      const ps = (pl && pl.processes) || [];
      replace(processes, ps.length ? h('table', { class: 'list' },
        h('thead', {}, h('tr', {}, ['Process', 'Command', 'Status', 'Started', 'Exit'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, ps.map((p) => h('tr', {},
          h('td', { class: 'mono', title: p.process_id }, p.process_id.replace(/^(proc_.{8}).+$/, '$1…')), h('td', { class: 'mono' }, p.command), h('td', {}, p.status),
          h('td', { title: fmtTime(p.started_at) }, fmtRel(p.started_at)), h('td', {}, p.exit_code ?? '—')))))
        : h('p', { class: 'empty' }, 'No background processes.'));
    } catch (e) { replace(processes, h('p', { class: 'hint' }, errText(e))); }
  }

  // Preview URLs of the sandbox's ports (docs/previews.md): a new one's
  // link carries its token, shown once; the list can revoke a port's.
  const previewList = h('div', { class: 'table-wrap' });
  const previewNew = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const portInput = h('input', { type: 'number', name: 'port', min: 1, max: 65535, required: true, placeholder: '8000' });
  async function loadPreviews() {
    try {
      const ps = (await call('GET', base + '/previews')) || [];
      replace(previewList, ps.length ? h('table', { class: 'list' },
        h('thead', {}, h('tr', {}, ['Port', 'Created', 'Expires', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, ps.map((p) => h('tr', { dataset: { port: p.port } }, h('td', { class: 'mono' }, String(p.port)),
          h('td', { title: fmtTime(p.created_at) }, fmtRel(p.created_at)), h('td', { title: fmtTime(p.expires_at) }, fmtRel(p.expires_at)),
          h('td', { class: 'actions' }, h('button', { type: 'button', class: 'danger', 'aria-label': 'Revoke the previews of port ' + p.port, onclick: async () => {
            try { await call('DELETE', base + '/preview/' + p.port); previewNew.textContent = 'Revoked the previews of port ' + p.port + '.'; } catch (e) { previewNew.textContent = errText(e); }
            loadPreviews();
          } }, 'Revoke'))))))
        : h('p', { class: 'empty' }, 'No previews.'));
    } catch (e) { replace(previewList, h('p', { class: 'hint' }, errText(e))); }
  }
  const previewForm = h('form', { class: 'inline', 'aria-label': 'Preview a port', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const p = await call('POST', base + '/preview/' + Number(portInput.value), {});
      const url = /^https?:\/\//.test(p.url || '') ? p.url : p.path_url;
      replace(previewNew, 'Preview of port ' + p.port + ': ',
        h('a', { href: url, target: '_blank', rel: 'noopener noreferrer', class: 'preview-link' }, 'open it'),
        ' (the link carries its token and is shown this once; it expires ' + fmtRel(p.expires_at) + ').');
    } catch (e) { previewNew.textContent = errText(e); }
    loadPreviews();
  } }, field('Port', portInput), h('button', { type: 'submit', class: 'secondary' }, 'Preview'));

  let dir = '/workspace';
  const pathInput = h('input', { type: 'text', value: dir, 'aria-label': 'Directory', class: 'mono' });
  const upload = h('input', { type: 'file', id: 'upload', multiple: true });
  async function loadFiles() {
    dir = pathInput.value.trim() || '/workspace';
    try {
      const ls = await call('POST', base + '/files/ls', { path: dir });
      const entries = (ls && ls.entries) || [];
      const up = dir.replace(/\/[^/]+\/?$/, '') || '/';
      replace(listing, h('table', { class: 'list' },
        h('thead', {}, h('tr', {}, ['Name', 'Size', 'Modified', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {},
          dir !== '/workspace' && dir !== '/' ? h('tr', {}, h('td', { colspan: 4 }, h('button', { type: 'button', class: 'link', onclick: () => { pathInput.value = up; loadFiles(); } }, '.. (up)'))) : null,
          entries.length ? entries.map(fileRow) : h('tr', {}, h('td', { colspan: 4, class: 'empty' }, 'Empty directory.')))));
    } catch (e) { replace(listing, h('p', { class: 'hint' }, errText(e))); }
  }
  function fileRow(e) {
    const name = e.path.replace(/\/$/, '').split('/').pop();
    if (e.is_dir) {
      return h('tr', {}, h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => { pathInput.value = e.path.replace(/\/$/, ''); loadFiles(); } }, name + '/')),
        h('td', {}, ''), h('td', { title: fmtTime(e.modified_at) }, fmtRel(e.modified_at)), h('td', {}, ''));
    }
    const href = apiURL(base + '/files/raw') + '?path=' + encodeURIComponent(e.path);
    return h('tr', {}, h('td', { class: 'mono' }, name), h('td', {}, fmtBytes(e.size)),
      h('td', { title: fmtTime(e.modified_at) }, fmtRel(e.modified_at)),
      h('td', { class: 'actions' }, h('a', { href, download: name, class: 'button secondary', 'aria-label': 'Download ' + name }, 'Download')));
  }
  upload.addEventListener('change', async () => {
    for (const f of upload.files) {
      status.textContent = 'Uploading ' + iso(f.name) + '…';
      try {
        const path = dir.replace(/\/$/, '') + '/' + f.name;
        await call('PUT', base + '/files/raw?path=' + encodeURIComponent(path), f);
        status.textContent = 'Uploaded ' + iso(f.name) + ' (' + fmtBytes(f.size) + ').';
      } catch (e) { status.textContent = 'Upload of ' + iso(f.name) + ' failed: ' + errText(e); }
    }
    upload.value = '';
    loadFiles();
  });
  const listing = h('div', { class: 'table-wrap' });
  replace(files,
    h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); loadFiles(); } },
      pathInput, h('button', { type: 'submit', class: 'secondary' }, 'Open')),
    active ? h('div', { class: 'upload' }, h('label', { for: 'upload', class: 'button secondary' }, 'Upload files…'), upload) : null,
    listing);

  // A paused sandbox keeps its files but runs nothing: resume, or destroy.
  const running = sb.status === 'active';
  const paused = sb.status === 'paused';
  const act = (label, cls, fn) => h('button', { type: 'button', class: cls, onclick: async () => {
    try { await fn(); } catch (e) { status.textContent = errText(e); }
  } }, label);
  const logLink = h('a', { href: '/ui/sandboxes/' + id + '/log', 'data-link': true, class: 'button secondary' }, 'Audit log');
  const destroy = act('Destroy', 'danger', async () => {
    if (!await confirmDialog('Destroy this sandbox? Its files are lost.', 'Destroy')) return;
    await call('DELETE', base);
    ctx.navigate('/ui/');
  });
  const actions = h('div', { class: 'actions' }, running ? [
    h('a', { href: '/ui/sandboxes/' + id + '/terminal', 'data-link': true, class: 'button' }, 'Terminal'),
    logLink,
    act('Extend 30 min', 'secondary', async () => {
      await extend(sb, 30);
      status.textContent = 'Extended by 30 minutes.';
      ctx.navigate(location.pathname, true);
    }),
    act('Snapshot', 'secondary', async () => {
      status.textContent = 'Taking a snapshot…';
      const snap = await call('POST', base + '/snapshots', { label: sb.label || undefined });
      replace(status, 'Snapshot ' + snap.id.slice(0, 8) + ' taken. ', h('a', { href: '/ui/snapshots', 'data-link': true }, 'Snapshots'));
    }),
    act('Fork', 'secondary', async () => {
      status.textContent = 'Forking…';
      const [child] = await call('POST', base + '/fork', { count: 1 });
      replace(status, 'Forked into ', h('a', { href: '/ui/sandboxes/' + child.id, 'data-link': true, class: 'mono' }, child.id.slice(0, 8)), '.');
    }),
    act('Pause', 'secondary', async () => {
      status.textContent = 'Pausing…';
      await call('POST', base + '/pause', {});
      ctx.navigate(location.pathname, true);
    }),
    destroy,
  ] : paused ? [
    act('Resume', null, async () => {
      status.textContent = 'Resuming…';
      await call('POST', base + '/resume');
      ctx.navigate(location.pathname, true);
    }),
    logLink, destroy,
  ] : logLink);

  replace(main, h('section', { 'data-page': 'sandbox' },
    h('p', { class: 'crumbs' }, h('a', { href: '/ui/', 'data-link': true }, 'Sandboxes'), ' / ', h('bdi', {}, sb.label || sb.id.slice(0, 8))),
    h('h1', {}, 'Sandbox ', h('bdi', { class: 'mono' }, sb.label || sb.id.slice(0, 8))),
    actions, status, info,
    running ? [h('h2', {}, 'Resources'), resources, h('h2', {}, 'Processes'), processes,
      h('h2', {}, 'Previews'), previewForm, previewNew, previewList, h('h2', {}, 'Files'), files] : null));
  if (running) await Promise.all([loadResources(), loadProcesses(), loadPreviews(), loadFiles()]);
}
