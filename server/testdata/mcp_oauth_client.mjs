// The official TypeScript MCP SDK's OAuth client against boxkite's /mcp/
// (TestMCPOAuthTypeScriptSDK): discovery from the 401's WWW-Authenticate,
// dynamic registration, authorization with PKCE (the consent form driven
// over HTTP, as a user's browser would), tools over the token, a refresh,
// and a reused refresh token revoking the family. Prints one JSON object.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  UnauthorizedError, auth, refreshAuthorization, discoverAuthorizationServerMetadata,
} from '@modelcontextprotocol/sdk/client/auth.js';

const [, , base, email, password] = process.argv;
const serverUrl = new URL('/mcp/', base);
// A loopback redirect URI: the consent step reads the code from the
// redirect's Location, as a native app's loopback listener would get it.
const redirectUrl = 'http://127.0.0.1:53682/callback';
const out = {};
let code;

class Provider {
  constructor() { this.saved = {}; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return {
      client_name: 'boxkite oauth test', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    };
  }
  state() { return 'st-' + Math.random().toString(36).slice(2); }
  clientInformation() { return this.saved.client; }
  saveClientInformation(c) { this.saved.client = c; }
  tokens() { return this.saved.tokens; }
  saveTokens(t) { this.saved.tokens = t; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
  async redirectToAuthorization(url) { code = await consent(url); }
}

function form(params) { return new URLSearchParams(params).toString(); }

// consent signs in on the consent page and allows access, returning the
// authorization code the redirect carries.
async function consent(authURL) {
  out.authorizeURL = authURL.toString();
  let res = await fetch(authURL, { redirect: 'manual' });
  const loginPage = await res.text();
  if (res.status !== 200 || !loginPage.includes('name="password"')) throw new Error(`sign-in page: ${res.status} ${loginPage}`);
  const params = Object.fromEntries(authURL.searchParams);
  res = await fetch(new URL('/oauth/authorize/login', base), {
    method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form({ ...params, email, password }),
  });
  if (res.status !== 303) throw new Error(`login: ${res.status} ${await res.text()}`);
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  res = await fetch(new URL(res.headers.get('location'), base), { headers: { Cookie: cookie }, redirect: 'manual' });
  const consentPage = await res.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(consentPage);
  if (res.status !== 200 || !csrf) throw new Error(`consent page: ${res.status} ${consentPage}`);
  res = await fetch(new URL('/oauth/authorize/decide', base), {
    method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
    body: form({ ...params, csrf: csrf[1], decision: 'approve' }),
  });
  if (res.status !== 302) throw new Error(`decide: ${res.status} ${await res.text()}`);
  const back = new URL(res.headers.get('location'));
  out.redirectedTo = back.origin + back.pathname;
  out.stateKept = back.searchParams.get('state') === params.state;
  return back.searchParams.get('code');
}

async function tools(provider, label) {
  const client = new Client({ name: 'boxkite-oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  const list = await client.listTools();
  const created = await client.callTool({ name: 'create_sandbox', arguments: { label } });
  const text = created.content[0].text;
  const id = /^Created sandbox (\S+)/.exec(text)?.[1];
  const ran = await client.callTool({ name: 'exec', arguments: { session_id: id, command: 'echo over-oauth' } });
  await client.close();
  return { tools: list.tools.map((t) => t.name), created: text, exec: ran.content[0].text, sandbox: id };
}

async function refreshWith(provider, metadata, refreshToken) {
  try {
    await refreshAuthorization(new URL(base), {
      metadata, clientInformation: provider.saved.client, refreshToken, resource: serverUrl,
    });
    return 'accepted';
  } catch (e) {
    return e.errorCode || e.constructor.name + ': ' + e.message;
  }
}

async function mcpStatus(token) {
  const res = await fetch(serverUrl, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await res.body?.cancel();
  return res.status;
}

const provider = new Provider();
// 1. Unauthorized: the SDK discovers, registers and sends the user to the
// consent page (redirectToAuthorization), then exchanges the code.
try {
  const client = new Client({ name: 'boxkite-oauth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  try {
    await client.connect(transport);
    throw new Error('connected without authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  out.clientID = provider.saved.client?.client_id;
  await transport.finishAuth(code);
  const first = provider.saved.tokens;
  out.tokenType = first.token_type;
  out.first = await tools(provider, 'via-oauth-1');

  // 2. Refresh: auth() with a refresh token rotates it.
  out.refresh = await auth(provider, { serverUrl });
  const second = provider.saved.tokens;
  out.rotated = second.refresh_token !== first.refresh_token && second.access_token !== first.access_token;
  out.second = await tools(provider, 'via-oauth-2');

  // 3. The first refresh token again: reuse, and the family is revoked.
  const metadata = await discoverAuthorizationServerMetadata(new URL(base));
  out.reuse = await refreshWith(provider, metadata, first.refresh_token);
  out.newestAfterReuse = await refreshWith(provider, metadata, second.refresh_token);
  out.accessAfterReuse = await mcpStatus(second.access_token);
  out.accessWithoutToken = await mcpStatus('');
} catch (e) {
  out.error = String(e && e.stack || e);
}
console.log(JSON.stringify(out));
