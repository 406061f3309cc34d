// DOM helpers. Everything the console shows is built with h(), never
// with innerHTML, so text from the API (labels, file names, commands)
// can never become markup.

// h creates an element: h('a', {href: '/ui/', class: 'x', onclick: f}, 'text', child…).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// replace puts children in place of el's content.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

// allowStyles lets the style elements other code creates (xterm.js makes
// three) pass the page's Content-Security-Policy, which admits only style
// elements carrying the page's nonce: the nonce the server put on this
// script is given to each one as it is created. Markup injected into the
// page gets no nonce, so its styles stay refused.
export function allowStyles(nonce) {
  if (!nonce) return;
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (name, opts) {
    const el = create.call(this, name, opts);
    if (String(name).toLowerCase() === 'style') el.nonce = nonce;
    return el;
  };
}

// iso isolates a string from the data (a label, a name) in the text
// around it (FSI … PDI): a right-to-left override in a sandbox's label
// otherwise turns the rest of the sentence around it backwards, e.g. a
// confirmation's "? Its files are lost.". An element that shows data
// alone is a <bdi>, which isolates it without adding characters to what
// is copied from the page.
export function iso(s) { return '\u2068' + s + '\u2069'; }

export function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function fmtRel(s, now = Date.now()) {
  const ms = new Date(s).getTime() - now;
  const abs = Math.abs(ms);
  let v;
  if (abs < 60e3) v = Math.round(abs / 1e3) + ' s';
  else if (abs < 3600e3) v = Math.round(abs / 60e3) + ' min';
  else if (abs < 86400e3) v = (abs / 3600e3).toFixed(1) + ' h';
  else v = (abs / 86400e3).toFixed(1) + ' d';
  return ms >= 0 ? 'in ' + v : v + ' ago';
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(1)) + ' ' + units[i];
}

// field is a labelled form control.
export function field(label, control, hint) {
  const id = control.id || 'f-' + Math.random().toString(36).slice(2);
  control.id = id;
  return h('div', { class: 'field' },
    h('label', { for: id }, label), control, hint ? h('small', { class: 'hint' }, hint) : null);
}

// confirmDialog asks a yes/no question in a modal <dialog>, keyboard
// accessible (Escape cancels, focus starts on Cancel).
export function confirmDialog(question, yes = 'Confirm') {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => close(false) }, 'Cancel');
    const ok = h('button', { type: 'button', class: 'danger', onclick: () => close(true) }, yes);
    const dlg = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-q' },
      h('p', { id: 'confirm-q' }, question), h('div', { class: 'actions' }, cancel, ok));
    function close(v) { dlg.close(); dlg.remove(); resolve(v); }
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); close(false); });
    document.body.appendChild(dlg);
    dlg.showModal();
    cancel.focus();
  });
}
