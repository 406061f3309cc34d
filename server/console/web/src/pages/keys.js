import { h, replace, field, fmtTime, fmtRel, confirmDialog, iso } from '../dom.js';
import { call, errText } from '../api.js';

// keyLifetimes are the expiries a new key may be given, as GitHub's token
// page offers them (30 days unless chosen otherwise); '' is none.
const keyLifetimes = [['1 day', 86400], ['7 days', 7 * 86400], ['30 days', 30 * 86400], ['90 days', 90 * 86400],
  ['1 year', 365 * 86400], ['No expiration', '']];

// keyExpiry is a key's Expires cell: never, when it expires, or that it
// has (by the server's word, expired, whatever this browser's clock says).
function keyExpiry(k) {
  if (!k.expires_at) return h('td', {}, 'never');
  if (k.expired) return h('td', { title: fmtTime(k.expires_at) }, h('span', { class: 'badge expired' }, 'expired'), ' ' + fmtRel(k.expires_at).replace(/^in .*/, 'just now'));
  return h('td', { title: fmtTime(k.expires_at) }, fmtRel(k.expires_at));
}

// keysPage lists the account's API keys (expired ones marked so), creates
// them with an expiry (showing the key once) and revokes them.
export async function keysPage(main, _params, ctx) {
  const tbody = h('tbody');
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
  const shown = h('div', { class: 'secret', hidden: true });
  async function load() {
    const keys = await call('GET', '/v1/api-keys');
    replace(tbody, keys.map((k) => h('tr', { class: k.revoked_at ? 'revoked' : k.expired ? 'expired' : '', 'data-key': k.id },
      h('td', {}, k.name, k.id === ctx.session.key_id ? h('span', { class: 'badge' }, ' this session') : null),
      h('td', { class: 'mono' }, k.prefix + '…'), h('td', {}, k.role),
      h('td', { title: fmtTime(k.created_at) }, fmtRel(k.created_at)),
      keyExpiry(k),
      h('td', {}, k.revoked_at ? 'revoked ' + fmtRel(k.revoked_at) : k.last_used_at ? 'used ' + fmtRel(k.last_used_at) : 'never used'),
      h('td', { class: 'actions' }, !k.revoked_at && k.id !== ctx.session.key_id ? h('button', { type: 'button', class: 'danger', onclick: async () => {
        if (!await confirmDialog('Revoke key ' + iso(k.name) + '? Whatever uses it stops at once.', 'Revoke')) return;
        try { await call('DELETE', '/v1/api-keys/' + k.id); status.textContent = 'Revoked ' + iso(k.name) + '.'; await load(); } catch (e) { status.textContent = errText(e); }
      } }, 'Revoke') : null))));
  }
  const name = h('input', { type: 'text', required: true, maxlength: 200 });
  const role = h('select', {}, h('option', { value: 'admin' }, 'admin'), h('option', { value: 'member' }, 'member'));
  const expires = h('select', { name: 'expires' }, keyLifetimes.map(([label, secs]) =>
    h('option', { value: String(secs), selected: secs === 30 * 86400 }, label)));
  const form = h('form', { class: 'inline', onsubmit: async (e) => {
    e.preventDefault();
    try {
      const body = { name: name.value.trim(), role: role.value };
      if (expires.value) body.expires_in_seconds = Number(expires.value);
      const k = await call('POST', '/v1/api-keys', body);
      replace(shown, h('p', {}, 'The new key, shown this once' + (k.expires_at ? ' (it expires ' + fmtTime(k.expires_at) + ')' : '') + ':'),
        h('code', { class: 'mono' }, k.key));
      shown.hidden = false;
      name.value = '';
      await load();
    } catch (err) { status.textContent = errText(err); }
  } }, field('Name', name), field('Role', role, 'member keys cannot take over terminals or manage keys'),
  field('Expiration', expires, 'it stops working then'), h('button', { type: 'submit' }, 'Create key'));
  await load();
  replace(main, h('section', { 'data-page': 'keys' }, h('h1', {}, 'API keys'), form, shown, status,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Name', 'Key', 'Role', 'Created', 'Expires', 'Use', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody))));
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
