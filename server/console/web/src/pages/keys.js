import { h, replace, field, fmtTime, fmtRel, confirmDialog, iso } from '../dom.js';
import { call, errText } from '../api.js';

// keysPage lists the account's API keys, creates (showing the key once)
// and revokes them.
export async function keysPage(main, _params, ctx) {
  const tbody = h('tbody');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const shown = h('div', { class: 'secret', hidden: true });
  async function load() {
    const keys = await call('GET', '/v1/api-keys');
    replace(tbody, keys.map((k) => h('tr', { class: k.revoked_at ? 'revoked' : '' },
      h('td', {}, k.name, k.id === ctx.session.key_id ? h('span', { class: 'badge' }, ' this session') : null),
      h('td', { class: 'mono' }, k.prefix + '…'), h('td', {}, k.role),
      h('td', { title: fmtTime(k.created_at) }, fmtRel(k.created_at)),
      h('td', {}, k.revoked_at ? 'revoked ' + fmtRel(k.revoked_at) : k.last_used_at ? 'used ' + fmtRel(k.last_used_at) : 'never used'),
      h('td', { class: 'actions' }, !k.revoked_at && k.id !== ctx.session.key_id ? h('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!await confirmDialog('Revoke key ' + iso(k.name) + '? Whatever uses it stops at once.', 'Revoke')) return;
        try { await call('DELETE', '/v1/api-keys/' + k.id); status.textContent = 'Revoked ' + iso(k.name) + '.'; await load(); } catch (e) { status.textContent = errText(e); }
      } }, 'Revoke') : null))));
  }
  const name = h('input', { type: 'text', required: true, maxlength: 200 });
  const role = h('select', {}, h('option', { value: 'admin' }, 'admin'), h('option', { value: 'member' }, 'member'));
  const form = h('form', { class: 'inline', onsubmit: async (e) => {
    e.preventDefault();
    try {
      const k = await call('POST', '/v1/api-keys', { name: name.value.trim(), role: role.value });
      replace(shown, h('p', {}, 'The new key, shown this once:'), h('code', { class: 'mono' }, k.key));
      shown.hidden = false;
      name.value = '';
      await load();
    } catch (err) { status.textContent = errText(err); }
  } }, field('Name', name), field('Role', role, 'member keys cannot take over terminals or manage keys'), h('button', { type: 'submit' }, 'Create key'));
  await load();
  replace(main, h('section', { 'data-page': 'keys' }, h('h1', {}, 'API keys'), form, shown, status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Name', 'Key', 'Role', 'Created', 'Use', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}

// sshKeysPage lists the SSH keys the bastion lets into sandboxes.
export async function sshKeysPage(main) {
  const tbody = h('tbody');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  async function load() {
    const keys = await call('GET', '/v1/account/ssh-keys');
    replace(tbody, keys.length ? keys.map((k) => h('tr', {},
      h('td', {}, k.name), h('td', { class: 'mono' }, k.fingerprint), h('td', { title: fmtTime(k.created_at) }, fmtRel(k.created_at)),
      h('td', { class: 'actions' }, h('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!await confirmDialog('Remove SSH key ' + iso(k.name) + '? Its terminals end.', 'Remove')) return;
        try { await call('DELETE', '/v1/account/ssh-keys/' + k.id); await load(); } catch (e) { status.textContent = errText(e); }
      } }, 'Remove')))) : h('tr', {}, h('td', { colspan: 4, class: 'empty' }, 'No SSH keys.')));
  }
  const pub = h('textarea', { rows: 3, required: true, class: 'mono', placeholder: 'ssh-ed25519 AAAA… you@host' });
  const name = h('input', { type: 'text', maxlength: 200, placeholder: 'optional' });
  const form = h('form', { onsubmit: async (e) => {
    e.preventDefault();
    try {
      await call('POST', '/v1/account/ssh-keys', { public_key: pub.value.trim(), name: name.value.trim() || undefined });
      pub.value = ''; name.value = '';
      status.textContent = 'Added.';
      await load();
    } catch (err) { status.textContent = errText(err); }
  } }, field('Public key', pub, 'the contents of ~/.ssh/id_ed25519.pub'), field('Name', name), h('button', { type: 'submit' }, 'Add key'));
  await load();
  replace(main, h('section', { 'data-page': 'ssh-keys' }, h('h1', {}, 'SSH keys'), form, status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Name', 'Fingerprint', 'Added', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
}
