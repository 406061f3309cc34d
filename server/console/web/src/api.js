// The console's calls: the API's /v1/… under /ui/api/, with the session
// cookie (sent by the browser) and the CSRF token (sent by us).

let csrf = '';

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

// errText is what a status line says of a failed call: the error's
// message and, when the API gave one, its hint (what to do about it).
export function errText(e) {
  return (e && e.message ? e.message : String(e)) + (e && e.hint ? ' — ' + e.hint : '');
}

// apiURL is the console's address of an API path, for links and sockets.
export function apiURL(path) { return '/ui/api' + path; }
