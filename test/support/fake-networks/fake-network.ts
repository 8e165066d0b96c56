import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Server, createServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { Channel } from '@campaign-ops/channels';
import { NetworkSettings } from '@campaign-ops/ad-networks';
import { TestCertificates, createTestCertificates } from '@campaign-ops/testing/webhook-sender';

/**
 * The base of a loopback HTTPS fake of one ad network: a real TLS server on 127.0.0.1 (a free
 * port, a certificate signed by a throwaway CA shared by every fake of the process) that records
 * every request and answers the way the network does. A channel's fake adds its routes and the
 * network's own shapes of "expired token", "refused refresh", "slow down" and "server error";
 * this base holds what they share: tokens, codes, the consent page, the OAuth 2 token endpoint,
 * ad accounts, and one-shot faults.
 *
 * An end-to-end test gives a child process `fake.env()` and `NODE_EXTRA_CA_CERTS=fake.caCertPath`;
 * an in-process test passes `fakeNetworkDispatcher()` to `createAdNetworks`.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Lower-cased names. */
  headers: Record<string, string>;
  rawBody: string;
  /** JSON parsed, a form as an object, anything else (SOAP XML) as the raw text. */
  body: unknown;
  /** When it arrived (Date.now()), to check the waits between calls. */
  at: number;
}

export interface FakeAnswer {
  status: number;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is with `contentType` (default text/plain). */
  text?: string;
  contentType?: string;
  /** Sent chunked (no Content-Length): this many chunks of this many bytes, as a network streaming a huge answer would. */
  stream?: { chunks: number; chunkBytes: number };
}

export interface FakeAccount {
  id: string;
  currency: string;
  /** IANA; a channel's fake writes it in the network's own form (e.g. Microsoft's enum). */
  timezone: string;
  /** Tokens that cannot reach this account although they are valid. */
  deniedTokens: Set<string>;
}

export interface FakeNetworkOptions {
  clientId?: string;
  clientSecret?: string;
  /** Ad accounts the tokens reach; more with `addAccount`. */
  accounts?: Array<{ id: string; currency: string; timezone: string }>;
}

/** How this network spells its OAuth parts; most use RFC 6749's names. */
export interface OAuthShape {
  consentPath: string;
  tokenPath: string;
  /** Query name of the client id on the consent page (TikTok: `app_id`). */
  consentClientIdParam?: string;
  /** Query name(s) of the code in the redirect back (TikTok: `auth_code` and `code`). */
  codeParam?: string | string[];
  /** Seconds an access token lives (`expires_in`). */
  accessTokenSeconds?: number;
  /** Whether the network issues refresh tokens (Meta does not). */
  issuesRefreshTokens?: boolean;
  /** What a refresh answers as `refresh_token`: a `new` one (default; Microsoft rolls them), the `same` one (LinkedIn), or `none` (Google keeps the one on file). */
  refreshTokenOnRefresh?: 'new' | 'same' | 'none';
  /**
   * RFC 7009 revocation: its path, how the client authenticates there (`none`: the token alone, as
   * Google's), and the form fields it requires beside `token`. Without: the network documents none.
   */
  revocation?: { path: string; clientAuth: 'none' | 'body' | 'basic'; requires?: string[] };
}

type Fault = { kind: 'rate_limited'; retryAfterSeconds: number } | { kind: 'fail'; status: number } | { kind: 'stall' };

/**
 * What a network does after it has carried out a create (the object exists at the network) and
 * before its caller learns of it: the ways a real network leaves a caller unsure.
 * - `stall`: never answers (the caller's timeout fires);
 * - `fail`: answers a server error (its own shape) with this status;
 * - `drop`: closes the connection without an answer;
 * - `hold`: answers nothing until `releaseHeld()` (for killing the caller meanwhile);
 * - `twice`: the object is made twice (two with the same marker, as after a retry of the
 *   network's own or a race it lost track of), then 503 is answered: a later lookup finds two.
 */
export type CreateFault = { kind: 'stall' } | { kind: 'fail'; status: number } | { kind: 'drop' } | { kind: 'hold' } | { kind: 'twice' };

let certificates: Promise<TestCertificates> | null = null;
/** One CA and server certificate for every fake of this process (one NODE_EXTRA_CA_CERTS file). */
export function fakeNetworkCertificates(): Promise<TestCertificates> {
  certificates ??= createTestCertificates(mkdtempSync(join(tmpdir(), 'fake-networks-')));
  return certificates;
}

let dispatcher: Agent | null = null;
/** An undici Agent that trusts the fakes' CA, for `createAdNetworks(settings, { dispatcher })`. */
export async function fakeNetworkDispatcher(): Promise<Agent> {
  const { caCert } = await fakeNetworkCertificates();
  dispatcher ??= new Agent({ connect: { ca: caCert }, keepAliveTimeout: 1_000 });
  return dispatcher;
}

export async function closeFakeNetworkDispatcher(): Promise<void> {
  const current = dispatcher;
  dispatcher = null;
  await current?.close();
}

export abstract class FakeNetwork {
  abstract readonly channel: Channel;
  protected abstract readonly oauth: OAuthShape;

  readonly clientId: string;
  readonly clientSecret: string;
  /** Every request, in order (consent page and token endpoint included). */
  readonly requests: RecordedRequest[] = [];
  readonly accounts = new Map<string, FakeAccount>();
  /** What the fake created, in order: the network's id and the body it accepted. */
  readonly created: Array<{ id: string; accountId: string; kind: string; body: unknown }> = [];
  /** Tokens revoked at the network, in order. */
  readonly revoked: string[] = [];

  private server: Server | null = null;
  private baseUrl = '';
  private certPath = '';
  private readonly accessTokens = new Map<string, 'valid' | 'expired'>();
  private readonly refreshTokens = new Set<string>();
  /** Codes the consent page handed out; `challenge`: the PKCE S256 challenge the consent was started with (RFC 7636). */
  private readonly codes = new Map<string, { redirectUri: string; used: boolean; challenge?: string }>();
  private readonly faults: Fault[] = [];
  private readonly createFaults: Array<{ kind: string; fault: CreateFault }> = [];
  private readonly stalled: ServerResponse[] = [];
  private readonly held: ServerResponse[] = [];
  private heldWaiters: Array<() => void> = [];
  private refusingRefresh = false;
  private denyingConsent = false;
  private nextId = 120_000_000_000;

  constructor(options: FakeNetworkOptions = {}) {
    this.clientId = options.clientId ?? `client-${randomBytes(4).toString('hex')}`;
    this.clientSecret = options.clientSecret ?? `secret-${randomBytes(8).toString('hex')}`;
    for (const account of options.accounts ?? []) this.addAccount(account);
  }

  /** Starts a fake of this class on 127.0.0.1 (a free port). */
  static async start<T extends FakeNetwork>(this: new (options?: FakeNetworkOptions) => T, options?: FakeNetworkOptions): Promise<T> {
    const fake = new this(options);
    await fake.listen();
    return fake;
  }

  private async listen(): Promise<void> {
    const certs = await fakeNetworkCertificates();
    this.certPath = certs.caCertPath;
    const server = createServer({ key: certs.key, cert: certs.cert }, (req, res) => void this.serve(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const res of [...this.stalled.splice(0), ...this.held.splice(0)]) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** `https://127.0.0.1:<port>` */
  get url(): string {
    return this.baseUrl;
  }

  /** The CA certificate file: NODE_EXTRA_CA_CERTS for a child process. */
  get caCertPath(): string {
    return this.certPath;
  }

  /** The `CHANNEL_<CHANNEL>_*` variables that point the service at this fake. */
  env(): Record<string, string> {
    const prefix = `CHANNEL_${this.channel.toUpperCase()}`;
    const settings = this.settings();
    return {
      [`${prefix}_API_URL`]: settings.apiUrl,
      [`${prefix}_OAUTH_URL`]: settings.oauthUrl,
      [`${prefix}_TOKEN_URL`]: settings.tokenUrl,
      [`${prefix}_CLIENT_ID`]: this.clientId,
      [`${prefix}_CLIENT_SECRET`]: this.clientSecret,
      ...(settings.developerToken ? { [`${prefix}_DEVELOPER_TOKEN`]: settings.developerToken } : {}),
    };
  }

  /** The same, as the settings object for an in-process adapter. */
  settings(overrides: Partial<NetworkSettings> = {}): NetworkSettings {
    return {
      channel: this.channel,
      apiUrl: this.baseUrl,
      oauthUrl: this.baseUrl + this.oauth.consentPath,
      tokenUrl: this.baseUrl + this.oauth.tokenPath,
      clientId: this.clientId,
      clientSecret: this.clientSecret,
      developerToken: null,
      timeoutMs: 5_000,
      ...overrides,
    };
  }

  // ---- telling the fake what to do ----

  addAccount(account: { id: string; currency: string; timezone: string }): FakeAccount {
    const entry: FakeAccount = { ...account, deniedTokens: new Set() };
    this.accounts.set(account.id, entry);
    return entry;
  }

  /** A valid access token, as if a person had consented (for token-import tests); `token` plants a known value. */
  issueAccessToken(token = `at-${randomBytes(12).toString('hex')}`): string {
    this.accessTokens.set(token, 'valid');
    return token;
  }

  /** A refresh token the token endpoint accepts; `token` plants a known value. */
  issueRefreshToken(token = `rt-${randomBytes(12).toString('hex')}`): string {
    this.refreshTokens.add(token);
    return token;
  }

  /** Calls with this token answer the network's "expired token" shape. */
  expireToken(token: string): void {
    this.accessTokens.set(token, 'expired');
  }

  /** The token stays valid but cannot reach this account. */
  denyAccount(accountId: string, token: string): void {
    this.accounts.get(accountId)?.deniedTokens.add(token);
  }

  /** Every refresh grant from now on is refused the network's way. */
  refuseRefresh(): void {
    this.refusingRefresh = true;
  }

  /** Refresh grants are accepted again (after `refuseRefresh`). */
  acceptRefresh(): void {
    this.refusingRefresh = false;
  }

  /** The next consent is refused: the browser goes back with `error=access_denied`. */
  denyNextConsent(): void {
    this.denyingConsent = true;
  }

  /** The next n calls (consent page excepted) answer the network's "slow down". */
  rateLimitNext(n: number, retryAfterSeconds: number): void {
    for (let i = 0; i < n; i++) this.faults.push({ kind: 'rate_limited', retryAfterSeconds });
  }

  /** The next n calls answer the network's server error with this status. */
  failNext(n: number, status = 503): void {
    for (let i = 0; i < n; i++) this.faults.push({ kind: 'fail', status });
  }

  /** The next n calls never answer (until `close`): for timeouts. */
  stallNext(n: number): void {
    for (let i = 0; i < n; i++) this.faults.push({ kind: 'stall' });
  }

  /** The next request that creates an object of `kind` (`campaign`, `budget`, …) is carried out, then misbehaves (see CreateFault). */
  afterNextCreate(kind: string, fault: CreateFault): void {
    this.createFaults.push({ kind, fault });
  }

  /** Resolves once a create answered with `hold` is being held. */
  whenHolding(): Promise<void> {
    return this.held.length > 0 ? Promise.resolve() : new Promise((resolve) => this.heldWaiters.push(resolve));
  }

  /** The held answers are never sent: their connections are closed (the caller is gone by then). */
  releaseHeld(): void {
    for (const res of this.held.splice(0)) res.destroy();
  }

  /**
   * The campaigns the network holds for a dispatch, told by the dispatch id in what was created
   * (wherever the adapter put it), independently of how the adapter looks them up.
   */
  campaignsFor(dispatchId: string): FakeNetwork['created'] {
    return this.created.filter((entry) => entry.kind === 'campaign' && JSON.stringify(entry.body).includes(dispatchId));
  }

  /** Requests whose path matches. */
  requestsTo(path: string | RegExp): RecordedRequest[] {
    return this.requests.filter((r) => (typeof path === 'string' ? r.path === path : path.test(r.path)));
  }

  lastRequest(path?: string | RegExp): RecordedRequest {
    const matching = path === undefined ? this.requests : this.requestsTo(path);
    const last = matching[matching.length - 1];
    if (!last) throw new Error(`${this.channel} fake received no request${path === undefined ? '' : ` to ${String(path)}`}`);
    return last;
  }

  // ---- what a channel's fake writes ----

  /** The network's API routes (everything but the consent page and token endpoint). */
  protected abstract route(req: RecordedRequest): FakeAnswer | Promise<FakeAnswer>;
  /** The network's answer to a call with an expired (`expired`) or unknown (`invalid`) token. */
  protected abstract tokenRefusedAnswer(req: RecordedRequest, why: 'expired' | 'invalid'): FakeAnswer;
  /** The network's "slow down". */
  protected abstract rateLimitedAnswer(req: RecordedRequest, retryAfterSeconds: number): FakeAnswer;
  /** The network's server error. */
  protected abstract serverErrorAnswer(req: RecordedRequest, status: number): FakeAnswer;

  /** RFC 6749 §5.2 refusal; networks that answer otherwise override it. */
  protected grantRefusedAnswer(_req: RecordedRequest, error: string, description: string): FakeAnswer {
    return { status: error === 'invalid_client' ? 401 : 400, json: { error, error_description: description } };
  }

  /** The token endpoint: RFC 6749 form grants, client credentials in the body or as HTTP Basic. */
  protected tokenEndpoint(req: RecordedRequest): FakeAnswer {
    if (req.method !== 'POST') return { status: 405, json: { error: 'invalid_request', error_description: 'POST only' } };
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
      return this.grantRefusedAnswer(req, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
    const form = req.body as Record<string, string>;
    const client = this.clientCredentials(req, form);
    if (client.id !== this.clientId || client.secret !== this.clientSecret)
      return this.grantRefusedAnswer(req, 'invalid_client', 'client authentication failed');
    if (form.grant_type === 'authorization_code') {
      const refusal = this.redeemCode(form.code, form.redirect_uri, form.code_verifier);
      if (refusal) return this.grantRefusedAnswer(req, 'invalid_grant', refusal);
      return { status: 200, json: this.tokenAnswer() };
    }
    if (form.grant_type === 'refresh_token') {
      const refusal = this.checkRefreshToken(form.refresh_token);
      if (refusal) return this.grantRefusedAnswer(req, 'invalid_grant', refusal);
      return { status: 200, json: this.tokenAnswer(form.refresh_token) };
    }
    return this.grantRefusedAnswer(req, 'unsupported_grant_type', `grant_type ${form.grant_type ?? '(none)'} is not supported`);
  }

  /** RFC 7009: a known token is revoked (200), an unknown one is `invalid_token` (400, as Google answers). */
  protected revocationEndpoint(req: RecordedRequest, revocation: NonNullable<OAuthShape['revocation']>): FakeAnswer {
    if (req.method !== 'POST') return { status: 405, json: { error: 'invalid_request', error_description: 'POST only' } };
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
      return this.grantRefusedAnswer(req, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
    const form = req.body as Record<string, string>;
    if (revocation.clientAuth !== 'none') {
      const client = this.clientCredentials(req, form);
      const wrongPlace = revocation.clientAuth === 'basic' ? !/^Basic /i.test(req.headers.authorization ?? '') : form.client_id === undefined;
      if (wrongPlace || client.id !== this.clientId || client.secret !== this.clientSecret)
        return this.grantRefusedAnswer(req, 'invalid_client', 'client authentication failed');
    }
    const missing = (revocation.requires ?? []).find((field) => !form[field]);
    if (missing) return this.grantRefusedAnswer(req, 'invalid_request', `${missing} is required`);
    return this.revokeGrant(form.token)
      ? { status: 200, json: {} }
      : { status: 400, json: { error: 'invalid_token', error_description: 'Token expired or revoked' } };
  }

  /**
   * Revokes `token` (a refresh or access token it issued): it stops working. False for a token it
   * never issued. `recordedAs`: how `revoked` lists it (X: the connection's `<token>:<secret>`).
   */
  protected revokeGrant(token: string | undefined, recordedAs = token): boolean {
    if (!token || (!this.refreshTokens.delete(token) && !this.accessTokens.delete(token))) return false;
    this.revoked.push(recordedAs ?? token);
    return true;
  }

  protected clientCredentials(req: RecordedRequest, form: Record<string, string>): { id?: string; secret?: string } {
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [id, secret] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
      return { id: decodeURIComponent(id), secret: decodeURIComponent(secret ?? '') };
    }
    return { id: form.client_id, secret: form.client_secret };
  }

  /**
   * Null when the code is good for this redirect URI (and spends it); else why not. A code whose
   * consent carried a PKCE challenge is good only with the verifier it was made from (S256).
   */
  protected redeemCode(code: string | undefined, redirectUri: string | undefined, codeVerifier?: string): string | null {
    const issued = code ? this.codes.get(code) : undefined;
    if (!issued) return 'the authorization code is unknown';
    if (issued.used) return 'the authorization code was already used';
    if (redirectUri !== undefined && issued.redirectUri !== redirectUri) return 'redirect_uri does not match the one of the consent';
    if (issued.challenge !== undefined && (!codeVerifier || createHash('sha256').update(codeVerifier).digest('base64url') !== issued.challenge))
      return 'code_verifier does not match the code_challenge';
    issued.used = true;
    return null;
  }

  /** Null when the refresh token may be used; else why not. */
  protected checkRefreshToken(refreshToken: string | undefined): string | null {
    if (this.refusingRefresh) return 'the refresh token was revoked';
    if (!refreshToken || !this.refreshTokens.has(refreshToken)) return 'the refresh token is unknown';
    return null;
  }

  /** A fresh `{access_token, token_type, expires_in, refresh_token?}`; `refreshed` is the refresh token of a refresh grant. */
  protected tokenAnswer(refreshed?: string): Record<string, unknown> {
    const onRefresh = refreshed === undefined ? 'new' : (this.oauth.refreshTokenOnRefresh ?? 'new');
    const refreshToken =
      this.oauth.issuesRefreshTokens === false || onRefresh === 'none' ? undefined : onRefresh === 'same' ? refreshed : this.issueRefreshToken();
    return {
      access_token: this.issueAccessToken(),
      token_type: 'Bearer',
      expires_in: this.oauth.accessTokenSeconds ?? 3600,
      ...(refreshToken ? { refresh_token: refreshToken } : {}),
    };
  }

  /** 'valid', 'expired' or 'invalid' (never issued). */
  protected tokenState(token: string | undefined): 'valid' | 'expired' | 'invalid' {
    return (token && this.accessTokens.get(token)) || 'invalid';
  }

  /** Null when the token is good; else the network's refusal. */
  protected checkToken(req: RecordedRequest, token: string | undefined): FakeAnswer | null {
    const state = this.tokenState(token);
    return state === 'valid' ? null : this.tokenRefusedAnswer(req, state);
  }

  /** The account when this token reaches it, else undefined. */
  protected reachableAccount(accountId: string, token: string | undefined): FakeAccount | undefined {
    const account = this.accounts.get(accountId);
    return account && token && !account.deniedTokens.has(token) ? account : undefined;
  }

  protected bearer(req: RecordedRequest): string | undefined {
    return /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  }

  /**
   * The `twice` fault: the create of `req`, which made `made`, is carried out again (a retry of the
   * network's own, or a race it lost track of). By default the request is routed once more; a fake
   * whose network would refuse the second by name (Google) makes it past that check.
   */
  protected async makeAgain(req: RecordedRequest, _made: FakeNetwork['created'][number]): Promise<void> {
    await this.route(req);
  }

  /** Records a created object and returns its new id (digits, as the networks' ids are). */
  protected remember(kind: string, accountId: string, body: unknown): string {
    const id = String(this.nextId++);
    this.created.push({ id, accountId, kind, body });
    return id;
  }

  // ---- the server ----

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', this.baseUrl);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      rawBody,
      body: parseBody(headers['content-type'] ?? '', rawBody),
      at: Date.now(),
    };
    this.requests.push(recorded);
    let answer: FakeAnswer | null;
    try {
      answer = await this.answer(recorded, res);
    } catch (error) {
      answer = { status: 500, text: `fake ${this.channel} failed: ${(error as Error).message}` };
    }
    if (answer) send(res, answer);
  }

  private async answer(req: RecordedRequest, res: ServerResponse): Promise<FakeAnswer | null> {
    if (req.path === this.oauth.consentPath) return this.consent(req);
    const fault = this.faults.shift();
    if (fault?.kind === 'stall') {
      this.stalled.push(res);
      return null;
    }
    if (fault?.kind === 'rate_limited') return this.rateLimitedAnswer(req, fault.retryAfterSeconds);
    if (fault?.kind === 'fail') return this.serverErrorAnswer(req, fault.status);
    if (req.path === this.oauth.tokenPath) return this.tokenEndpoint(req);
    if (this.oauth.revocation && req.path === this.oauth.revocation.path) return this.revocationEndpoint(req, this.oauth.revocation);
    if (this.createFaults.length === 0) return this.route(req);
    const before = this.created.length;
    const answer = await this.route(req);
    const made = this.created.slice(before).map((entry) => entry.kind);
    const index = this.createFaults.findIndex((pending) => made.includes(pending.kind));
    if (index < 0) return answer;
    const [{ kind: madeKind, fault: after }] = this.createFaults.splice(index, 1);
    switch (after.kind) {
      case 'stall':
        this.stalled.push(res);
        return null;
      case 'hold':
        this.held.push(res);
        for (const resolve of this.heldWaiters.splice(0)) resolve();
        return null;
      case 'drop':
        res.socket?.destroy();
        return null;
      case 'fail':
        return this.serverErrorAnswer(req, after.status);
      case 'twice':
        await this.makeAgain(req, this.created.filter((entry) => entry.kind === madeKind).at(-1)!);
        return this.serverErrorAnswer(req, 503);
    }
    return answer;
  }

  /** The consent page, as if the person had logged in and agreed: 302 back with a code and the state. */
  private consent(req: RecordedRequest): FakeAnswer {
    const clientId = req.query[this.oauth.consentClientIdParam ?? 'client_id'];
    const redirectUri = req.query.redirect_uri;
    if (clientId !== this.clientId || !redirectUri) return { status: 400, text: 'unknown client or no redirect_uri' };
    const back = new URL(redirectUri);
    if (this.denyingConsent) {
      this.denyingConsent = false;
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user denied the request');
    } else {
      const code = `code-${randomBytes(10).toString('hex')}`;
      if (req.query.code_challenge !== undefined && req.query.code_challenge_method !== 'S256')
        return { status: 400, text: 'code_challenge_method must be S256' };
      this.codes.set(code, { redirectUri, used: false, ...(req.query.code_challenge !== undefined ? { challenge: req.query.code_challenge } : {}) });
      for (const name of [this.oauth.codeParam ?? 'code'].flat()) back.searchParams.set(name, code);
    }
    if (req.query.state !== undefined) back.searchParams.set('state', req.query.state);
    return { status: 302, headers: { location: back.toString() } };
  }
}

function parseBody(contentType: string, raw: string): unknown {
  if (raw === '') return undefined;
  if (contentType.includes('json')) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  if (contentType.startsWith('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(raw));
  return raw;
}

function send(res: ServerResponse, answer: FakeAnswer): void {
  const headers: Record<string, string> = { ...(answer.headers ?? {}) };
  if (answer.stream) {
    res.writeHead(answer.status, { 'content-type': 'application/json', ...headers });
    const chunk = Buffer.alloc(answer.stream.chunkBytes, 0x20);
    let left = answer.stream.chunks;
    const more = (): void => {
      // The reader may hang up once it has read enough.
      while (left > 0 && !res.destroyed) {
        left--;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
    };
    more();
    return;
  }
  let body = '';
  if (answer.json !== undefined) {
    body = JSON.stringify(answer.json);
    headers['content-type'] ??= 'application/json; charset=UTF-8';
  } else if (answer.text !== undefined) {
    body = answer.text;
    headers['content-type'] ??= answer.contentType ?? 'text/plain; charset=UTF-8';
  }
  res.writeHead(answer.status, headers);
  res.end(body);
}

/** An https URL on 127.0.0.1 where nothing listens (connection refused), for "network down" tests. */
export async function refusingLoopbackUrl(): Promise<string> {
  const { createServer: createTcpServer } = await import('node:net');
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `https://127.0.0.1:${port}`;
}

/** Follows a consent URL as a person's browser would (the fake consents at once): the redirect's query. */
export async function followConsent(authorizationUrl: string): Promise<{ location: URL; query: Record<string, string> }> {
  const { request } = await import('undici');
  const answer = await request(authorizationUrl, { dispatcher: await fakeNetworkDispatcher() });
  await answer.body.text();
  const location = answer.headers.location;
  if (answer.statusCode !== 302 || typeof location !== 'string') throw new Error(`the consent page answered ${answer.statusCode}, not a redirect`);
  const url = new URL(location);
  return { location: url, query: Object.fromEntries(url.searchParams) };
}
