// The console's calls: the API's /v1/… under /ui/api/, with the session
// cookie (sent by the browser) and the CSRF token (sent by us).

let csrf = '';
// skew is the server's clock less the browser's (ms), from the Date header
// of the latest answer: what is "now" for the server's lifetimes.
let skew = 0;

export function setCSRF(t) { csrf = t || ''; }

export class APIError extends Error {
  constructor(status, env) {
    const e = (env && env.error) || {};
    super(e.message || 'request failed with status ' + status);
    this.status = status;
    this.code = e.code || '';
    this.hint = e.hint || '';
    this.requestID = e.request_id || '';
  }
}

// call sends method path (an API path such as /v1/sandboxes) and returns
// the decoded answer (null for 204). body is JSON unless it is a Blob or File.
export async function call(method, path, body, opts = {}) {
  return raw(method, '/ui/api' + path, body, opts);
}

export async function raw(method, url, body, opts = {}) {
  const headers = {};
  let payload;
  if (body instanceof Blob) {
    payload = body;
    headers['Content-Type'] = 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = csrf;
  const resp = await fetch(url, { method, headers, body: payload, credentials: 'same-origin', signal: opts.signal });
  const date = Date.parse(resp.headers.get('Date') || '');
  if (!Number.isNaN(date)) skew = date - Date.now();
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!resp.ok) {
    const err = new APIError(resp.status, data);
    if (resp.status === 401 && opts.onSignedOut !== false) window.dispatchEvent(new CustomEvent('console:signedout'));
    throw err;
  }
  return data;
}

// extend adds minutes to a sandbox's lifetime. The API's extend sets the
// lifetime left, counted from now (lifetime_minutes), so the console asks
// for what is left plus minutes: asking for minutes alone would cut a
// sandbox with more left short. Past the server's longest lifetime the API
// refuses it, saying how long that is.
export async function extend(sb, minutes) {
  const left = Math.max(0, Math.ceil((Date.parse(sb.expires_at) - (Date.now() + skew)) / 60e3));
  return call('POST', '/v1/sandboxes/' + sb.id + '/extend', { lifetime_minutes: left + minutes });
}

// errText is what a status line says of a failed call: the error's
// message and, when the API gave one, its hint (what to do about it).
export function errText(e) {
  return (e && e.message ? e.message : String(e)) + (e && e.hint ? ' — ' + e.hint : '');
}

// apiURL is the console's address of an API path, for links and sockets.
export function apiURL(path) { return '/ui/api' + path; }
