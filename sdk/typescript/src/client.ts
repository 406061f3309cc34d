/** The client, {@link Boxkite}, and its resource collections. */

import { resolveConfig } from "./config.js";
import { BoxkiteError } from "./errors.js";
import { type Body, TEXT_TYPES, Transport, newIdempotencyKey, nextCursor, seg } from "./http.js";
import { Sandbox } from "./sandbox.js";
import { lines } from "./streams.js";
import type {
  Account as AccountRecord,
  APIKey,
  APIKeyCreated,
  CommandRule,
  CreateImageRequest,
  CreateSandboxRequest,
  CreateSecretRequest,
  CreateWebhookRequest,
  Health,
  HostStatus,
  Image,
  LogPage,
  MCPConnection,
  SandboxRecord,
  Secret,
  Snapshot,
  SSHKey,
  TakeoverToken,
  TokenResponse,
  UpdateSecretRequest,
  Usage,
  Volume,
  Webhook,
  WebhookDelivery,
} from "./types.js";

/** Options of a create: the Idempotency-Key to send (a fresh one by default). */
export interface CreateOptions {
  idempotencyKey?: string;
}

/**
 * A REST collection under one path: create, list, get, delete. A new API
 * resource is a subclass naming its path and its create's fields.
 */
export class Collection<T, C extends object> {
  constructor(
    protected readonly t: Transport,
    readonly path: string,
  ) {}

  /** Creates an item; retried creates with the same key run once. */
  create(body: C, o: CreateOptions = {}): Promise<T> {
    return this.t.json("POST", this.path, { json: body, idempotencyKey: o.idempotencyKey ?? newIdempotencyKey() });
  }

  /** Every item of the account, newest first. */
  async list(): Promise<T[]> {
    return (await this.t.json<T[] | undefined>("GET", this.path)) ?? [];
  }

  get(id: string): Promise<T> {
    return this.t.json("GET", `${this.path}/${seg(id)}`);
  }

  async delete(id: string): Promise<void> {
    await this.t.json("DELETE", `${this.path}/${seg(id)}`);
  }
}

/** A page of a paged list ({@link PagedCollection.page}, {@link Webhooks.deliveriesPage}). */
export interface Page<T> {
  items: T[];
  /** Pass as cursor for the next page; undefined on the last one. */
  nextCursor?: string;
}

/** Reads the pages read(limit, cursor) gives, pageSize (0 or less: 100, as the Go client) at a time. */
async function* pages<T>(pageSize: number | undefined, read: (limit: number, cursor?: string) => Promise<Page<T>>): AsyncGenerator<T> {
  const limit = pageSize && pageSize > 0 ? pageSize : 100;
  let cursor: string | undefined;
  do {
    const p = await read(limit, cursor);
    yield* p.items;
    cursor = p.nextCursor;
  } while (cursor);
}

/** A collection whose list pages as the sandboxes' does (limit, cursor, Link: rel="next"): images, webhooks. */
export class PagedCollection<T, C extends object> extends Collection<T, C> {
  /**
   * One page of the account's items, newest first: at most limit
   * (1..1000), after the page whose nextCursor is cursor.
   */
  async page(o: { limit: number; cursor?: string }): Promise<Page<T>> {
    const { data, headers } = await this.t.jsonWithHeaders<T[]>("GET", this.path, { query: { limit: o.limit, cursor: o.cursor } });
    return { items: data ?? [], nextCursor: nextCursor(headers) };
  }

  /**
   * Every item of the account, newest first, read pageSize (default 100)
   * at a time: `for await (const img of bk.images.all())`. One made
   * meanwhile is not seen, and none is seen twice.
   */
  all(o: { pageSize?: number } = {}): AsyncGenerator<T> {
    return pages(o.pageSize, (limit, cursor) => this.page({ limit, cursor }));
  }
}

/** A collection whose API has no GET of one item: get() searches the list. */
class ListedCollection<T extends { id?: string }, C extends object> extends Collection<T, C> {
  override async get(id: string): Promise<T> {
    const found = (await this.list()).find((x) => x.id === id);
    if (!found) throw new BoxkiteError({ code: "not_found", message: `no ${this.path} item ${id}`, status: 404, hint: "list them first" });
    return found;
  }
}

/** Persistent volumes, mounted into sandboxes by id. */
export class Volumes extends Collection<Volume, { label?: string; size_gb?: number }> {}

/** Named egress grants to an MCP catalog host. */
export class MCPConnections extends Collection<MCPConnection, { label: string; catalog_id: string }> {}

/** The account's API keys. A created key's `key` is shown this once. */
export class APIKeys extends ListedCollection<APIKey, { name: string; role?: "admin" | "member" }> {
  override create(body: { name: string; role?: "admin" | "member" }, o: CreateOptions = {}): Promise<APIKeyCreated> {
    return super.create(body, o) as Promise<APIKeyCreated>;
  }

  revoke(id: string): Promise<void> {
    return this.delete(id);
  }
}

/** SSH public keys the bastion accepts for this account. */
export class SSHKeys extends ListedCollection<SSHKey, { public_key: string; name?: string }> {}

/**
 * The account's secrets: write-only values the server sends only to their
 * allowed hosts (Sandbox.httpRequest substitutes {{secret:NAME}}). An id may
 * be the secret's id or its name.
 */
export class Secrets extends ListedCollection<Secret, CreateSecretRequest> {
  /** Replaces a secret's value (and allowed_hosts when given). */
  update(id: string, body: UpdateSecretRequest): Promise<Secret> {
    return this.t.json("PUT", `${this.path}/${seg(id)}`, { json: body });
  }

  override async get(id: string): Promise<Secret> {
    const found = (await this.list()).find((x) => x.id === id || x.name === id);
    if (!found) throw new BoxkiteError({ code: "not_found", message: `no secret ${id}`, status: 404, hint: "list them first" });
    return found;
  }
}

/**
 * Webhook subscriptions: the account's events sent, signed, to a URL
 * (docs/webhooks.md). A created subscription's `secret` is shown this once.
 */
export class Webhooks extends PagedCollection<Webhook, CreateWebhookRequest> {
  /** A page of the subscription's deliveries, newest first (limit 1..100, 20 by default). */
  async deliveries(id: string, o: { limit?: number; offset?: number } = {}): Promise<WebhookDelivery[]> {
    return (await this.deliveriesPage(id, o)).items;
  }

  /**
   * A page of the subscription's deliveries, newest first: limit (1..100,
   * 20 by default) after the newest offset, or after the page whose
   * nextCursor is cursor.
   */
  async deliveriesPage(id: string, o: { limit?: number; offset?: number; cursor?: string } = {}): Promise<Page<WebhookDelivery>> {
    const { data, headers } = await this.t.jsonWithHeaders<WebhookDelivery[]>("GET", `${this.path}/${seg(id)}/deliveries`, { query: o });
    return { items: data ?? [], nextCursor: nextCursor(headers) };
  }

  /**
   * Every delivery of the subscription, newest first, read pageSize (at
   * most 100) at a time. One queued meanwhile is not seen, and none twice.
   */
  allDeliveries(id: string, o: { pageSize?: number } = {}): AsyncGenerator<WebhookDelivery> {
    return pages(o.pageSize, (limit, cursor) => this.deliveriesPage(id, { limit: Math.min(limit, 100), cursor }));
  }

  /** Queues a webhook.test event for this subscription. */
  test(id: string): Promise<WebhookDelivery> {
    return this.t.json("POST", `${this.path}/${seg(id)}/test`);
  }

  /** Sends a delivered or failed delivery's event again (same event_id), as a new delivery. */
  redeliver(id: string, deliveryId: string): Promise<WebhookDelivery> {
    return this.t.json("POST", `${this.path}/${seg(id)}/deliveries/${seg(deliveryId)}/redeliver`);
  }
}

/** Sandbox images: built from a spec, or imported from an OCI layout. */
export class Images extends PagedCollection<Image, CreateImageRequest> {
  /** Imports an OCI image layout tar (the body may be a stream). */
  importArchive(archive: Body, label?: string): Promise<Image> {
    return this.t.json("POST", `${this.path}/import`, { body: archive, query: { label }, headers: { "Content-Type": "application/x-tar" } });
  }

  /** The build's log as text. */
  async logs(id: string): Promise<string> {
    return (await this.t.raw("GET", `${this.path}/${seg(id)}/logs`, { streamTypes: TEXT_TYPES })).text();
  }

  /** The build's log lines as they are written, until the build ends. */
  async *followLogs(id: string): AsyncGenerator<string> {
    const resp = await this.t.raw("GET", `${this.path}/${seg(id)}/logs`, { query: { follow: 1 }, timeoutMs: 0, streamTypes: TEXT_TYPES });
    yield* lines(resp.body);
  }

  /** A page of the build's audit log (its egress and outcome). */
  auditLog(id: string, o: { limit?: number; offset?: number } = {}): Promise<LogPage> {
    return this.t.json("GET", `${this.path}/${seg(id)}/log`, { query: o });
  }
}

/** A page of {@link Sandboxes.page}: its sandboxes, and the cursor of the next page. */
export interface SandboxPage {
  sandboxes: Sandbox[];
  /** Pass as cursor for the next page; undefined on the last one. */
  nextCursor?: string;
}

/** The account's sandboxes; each one is handled through a {@link Sandbox}. */
export class Sandboxes {
  constructor(private readonly t: Transport) {}

  /** Creates a sandbox; it is active and ready for calls when this returns. */
  async create(req: Omit<CreateSandboxRequest, "count"> = {}, o: CreateOptions = {}): Promise<Sandbox> {
    const data = await this.t.json<SandboxRecord>("POST", "/v1/sandboxes", {
      json: req,
      idempotencyKey: o.idempotencyKey ?? newIdempotencyKey(),
    });
    return new Sandbox(this.t, data);
  }

  /** Creates count (1..10) sandboxes alike. */
  async createMany(count: number, req: Omit<CreateSandboxRequest, "count"> = {}, o: CreateOptions = {}): Promise<Sandbox[]> {
    const data = await this.t.json<SandboxRecord | SandboxRecord[]>("POST", "/v1/sandboxes", {
      json: { ...req, count },
      idempotencyKey: o.idempotencyKey ?? newIdempotencyKey(),
    });
    return (Array.isArray(data) ? data : [data]).map((d) => new Sandbox(this.t, d));
  }

  /** The account's sandboxes, newest first (all of them: see page and all for large accounts). */
  async list(o: { activeOnly?: boolean } = {}): Promise<Sandbox[]> {
    const data = await this.t.json<SandboxRecord[]>("GET", "/v1/sandboxes", { query: { active_only: o.activeOnly ? "true" : undefined } });
    return (data ?? []).map((d) => new Sandbox(this.t, d));
  }

  /**
   * One page of the account's sandboxes, newest first: at most limit
   * (1..1000), after the page whose nextCursor is cursor. nextCursor is
   * undefined on the last page.
   */
  async page(o: { activeOnly?: boolean; limit: number; cursor?: string }): Promise<SandboxPage> {
    const { data, headers } = await this.t.jsonWithHeaders<SandboxRecord[]>("GET", "/v1/sandboxes", {
      query: { active_only: o.activeOnly ? "true" : undefined, limit: o.limit, cursor: o.cursor },
    });
    return { sandboxes: (data ?? []).map((d) => new Sandbox(this.t, d)), nextCursor: nextCursor(headers) };
  }

  /**
   * Every sandbox of the account, newest first, read pageSize (default,
   * and for 0 or less, 100, as the Go client) at a time:
   * `for await (const sb of bk.sandboxes.all())`. A sandbox created
   * meanwhile is not seen, and none is seen twice.
   */
  async *all(o: { activeOnly?: boolean; pageSize?: number } = {}): AsyncGenerator<Sandbox> {
    const limit = o.pageSize && o.pageSize > 0 ? o.pageSize : 100;
    let cursor: string | undefined;
    do {
      const p = await this.page({ activeOnly: o.activeOnly, limit, cursor });
      yield* p.sandboxes;
      cursor = p.nextCursor;
    } while (cursor);
  }

  async get(id: string): Promise<Sandbox> {
    return new Sandbox(this.t, await this.t.json<SandboxRecord>("GET", `/v1/sandboxes/${seg(id)}`));
  }

  /** A handle for a sandbox id, without a request. */
  bind(id: string): Sandbox {
    return new Sandbox(this.t, { id });
  }

  async delete(id: string): Promise<void> {
    await this.t.json("DELETE", `/v1/sandboxes/${seg(id)}`);
  }
}

/**
 * The account's snapshots (take one with Sandbox.snapshot): list, get,
 * delete, and restore into a new sandbox.
 */
export class Snapshots {
  constructor(private readonly t: Transport) {}

  /** The account's snapshots, newest first; of one sandbox with sandboxId. */
  async list(o: { sandboxId?: string } = {}): Promise<Snapshot[]> {
    const path = o.sandboxId ? `/v1/sandboxes/${seg(o.sandboxId)}/snapshots` : "/v1/snapshots";
    return (await this.t.json<Snapshot[] | undefined>("GET", path)) ?? [];
  }

  get(id: string): Promise<Snapshot> {
    return this.t.json("GET", `/v1/snapshots/${seg(id)}`);
  }

  /** Deletes a snapshot; sandboxes restored from it keep their files. */
  async delete(id: string): Promise<void> {
    await this.t.json("DELETE", `/v1/snapshots/${seg(id)}`);
  }

  /** A new sandbox with the snapshot's files. */
  async restore(id: string, o: { label?: string; idempotencyKey?: string } = {}): Promise<Sandbox> {
    const data = await this.t.json<SandboxRecord>("POST", `/v1/snapshots/${seg(id)}/restore`, {
      json: o.label ? { label: o.label } : {},
      idempotencyKey: o.idempotencyKey ?? newIdempotencyKey(),
    });
    return new Sandbox(this.t, data);
  }
}

/** The account behind the credential: settings, usage, allowlist, host. */
export class Account {
  constructor(private readonly t: Transport) {}

  get(): Promise<AccountRecord> {
    return this.t.json("GET", "/v1/account");
  }

  /** The account of an access token (GET /v1/account/me). */
  me(): Promise<AccountRecord> {
    return this.t.json("GET", "/v1/account/me");
  }

  update(o: { scrub_output?: boolean }): Promise<AccountRecord> {
    return this.t.json("PATCH", "/v1/account", { json: o });
  }

  usage(): Promise<Usage> {
    return this.t.json("GET", "/v1/usage");
  }

  /** The host's use of its limits (admin keys). */
  host(): Promise<HostStatus> {
    return this.t.json("GET", "/v1/host");
  }

  async allowedCommands(): Promise<CommandRule[]> {
    return (await this.t.json<{ rules?: CommandRule[] }>("GET", "/v1/account/allowed-commands"))?.rules ?? [];
  }

  async setAllowedCommands(rules: CommandRule[]): Promise<CommandRule[]> {
    return (await this.t.json<{ rules?: CommandRule[] }>("PUT", "/v1/account/allowed-commands", { json: { rules } }))?.rules ?? [];
  }

  async clearAllowedCommands(): Promise<void> {
    await this.t.json("DELETE", "/v1/account/allowed-commands");
  }
}

export interface BoxkiteOptions {
  /** Default: BOXKITE_BASE_URL, then ~/.boxkite (what `boxkite up` wrote), then http://127.0.0.1:8090. */
  baseUrl?: string;
  /** Default: BOXKITE_API_KEY, then ~/.boxkite. */
  apiKey?: string;
  /** Milliseconds to wait for an answer to start (exec adds the command's timeout). Default 120000. */
  timeoutMs?: number;
  /** How often a 429 or 503 is retried, after Retry-After. Default 3. */
  maxRetries?: number;
  /** The longest one wait before a retry. Default 60000. */
  maxRetryWaitMs?: number;
  userAgent?: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

/** A client of one boxkite control plane. */
export class Boxkite {
  /** @internal */
  readonly t: Transport;
  readonly sandboxes: Sandboxes;
  readonly volumes: Volumes;
  readonly images: Images;
  readonly mcpConnections: MCPConnections;
  readonly apiKeys: APIKeys;
  readonly sshKeys: SSHKeys;
  readonly secrets: Secrets;
  readonly webhooks: Webhooks;
  readonly snapshots: Snapshots;
  readonly account: Account;

  constructor(o: BoxkiteOptions = {}) {
    const cfg = resolveConfig(o.baseUrl, o.apiKey);
    this.t = new Transport({ ...o, ...cfg });
    this.sandboxes = new Sandboxes(this.t);
    this.volumes = new Volumes(this.t, "/v1/volumes");
    this.images = new Images(this.t, "/v1/images");
    this.mcpConnections = new MCPConnections(this.t, "/v1/mcp-connections");
    this.apiKeys = new APIKeys(this.t, "/v1/api-keys");
    this.sshKeys = new SSHKeys(this.t, "/v1/account/ssh-keys");
    this.secrets = new Secrets(this.t, "/v1/secrets");
    this.webhooks = new Webhooks(this.t, "/v1/webhooks");
    this.snapshots = new Snapshots(this.t);
    this.account = new Account(this.t);
  }

  get baseUrl(): string {
    return this.t.baseUrl;
  }

  /** The Boxkite-Version the server last sent. */
  get serverVersion(): string | undefined {
    return this.t.serverVersion;
  }

  health(): Promise<Health> {
    return this.t.json("GET", "/health", { auth: "" });
  }

  ready(): Promise<Health> {
    return this.t.json("GET", "/health/ready", { auth: "" });
  }

  /** A handle for sandbox id, without a request. */
  sandbox(id: string): Sandbox {
    return this.sandboxes.bind(id);
  }

  /** Creates an account; the answer carries an access token. */
  signup(email: string, password: string): Promise<TokenResponse> {
    return this.t.json("POST", "/v1/auth/signup", { json: { email, password }, auth: "" });
  }

  login(email: string, password: string): Promise<TokenResponse> {
    return this.t.json("POST", "/v1/auth/login", { json: { email, password }, auth: "" });
  }

  /** boxkite-bastion only: a takeover token for an SSH key's holder. */
  bastionTakeoverToken(req: { sandbox_id: string; public_key?: string; token?: string }): Promise<TakeoverToken> {
    return this.t.json("POST", "/v1/bastion/takeover-token", { json: req });
  }
}
