import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Injectable } from '@nestjs/common';
import { AccountDirectory } from '@campaign-ops/accounts';
import { observeHttpAnswer, withRequestId } from '@campaign-ops/service-runtime';
import { authenticateOnce, bearer } from './auth.guards';
import { acceptJsonBody, isJsonType, MAX_BODY_BYTES } from './json-body.middleware';
import { JSON_UTF8, LAUNCH, LaunchRoute } from './launch-route';
import { RateLimitMiddleware } from './rate-limit.middleware';
import { AnswerTarget, GatewayRequest } from './request-context';
import { nameRequest } from './request-id.middleware';

/**
 * `POST /v1/campaigns` answered before express: the launch is most of the gateway's traffic, and
 * express's own work per request (its request and response objects, a router walked through
 * every middleware, `response.json`) cost about as much CPU as the rest of the gateway's part in
 * it (measured on node:http: 55 against 150 to 200 µs a request). The steps are the middlewares'
 * and LaunchRoute's own, called in their order on node's request and response: the answer is
 * counted and timed (`observeHttpAnswer`), the request named (`nameRequest`, and its id carried
 * with `withRequestId`), the key looked up and its rate limit taken, the body read and checked
 * (`acceptJsonBody`), then LaunchRoute's launch, sent as express's `response.send` sends a string.
 *
 * Everything else goes to express untouched, and so does a launch at any point where express's
 * chain would answer otherwise, with what was done so far on the request so that nothing is done
 * twice (the id, the rate limit taken, the body read, a failure to answer): a request without a
 * valid key (limited by its address), over its rate limit (429), without a declared length within
 * the body limit or not JSON, a body that does not parse or that the compiled rules do not accept
 * (ApiValidationPipe words it), and any failure of the launch (ApiExceptionFilter answers it, in
 * the envelope, through the idempotency store's capture when a key was reserved).
 */
@Injectable()
export class LaunchFastPath {
  constructor(
    private readonly directory: AccountDirectory,
    private readonly limits: RateLimitMiddleware,
    private readonly route: LaunchRoute,
  ) {}

  /** Takes the server's requests before its one listener (express), which gets every other one. */
  install(server: Server): void {
    const listeners = server.listeners('request') as RequestListener[];
    if (listeners.length !== 1) throw new Error(`the gateway's server has ${listeners.length} request listeners, not express alone`);
    const [express] = listeners;
    server.removeListener('request', express);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (!this.takes(request)) return void express.call(server, request, response);
      this.launch(request as GatewayRequest, response, () => void express.call(server, request, response));
    });
  }

  /** A launch as express's chain would read it: a key sent, a body of a declared length within the limit, JSON. */
  private takes(request: IncomingMessage): boolean {
    if (request.method !== 'POST' || request.url !== LAUNCH || !request.headers.authorization) return false;
    const length = Number(request.headers['content-length']);
    return (
      Number.isInteger(length) &&
      length > 0 &&
      length <= MAX_BODY_BYTES &&
      request.headers['transfer-encoding'] === undefined &&
      isJsonType(request.headers['content-type'])
    );
  }

  private launch(request: GatewayRequest, response: ServerResponse, handOn: () => void): void {
    observeHttpAnswer(request, LAUNCH, response);
    withRequestId(nameRequest(request, response), () =>
      this.answer(request, response, handOn).catch((error: unknown) => {
        request.launchFailure = { error };
        handOn();
      }),
    );
  }

  private async answer(request: GatewayRequest, response: ServerResponse, handOn: () => void): Promise<void> {
    const key = bearer(request);
    const found = key ? await authenticateOnce(this.directory, request, key) : null;
    // Limited by the client's address, and refused, by express's chain (the lookup is kept on the request).
    if (!found?.ok) return handOn();
    if (!this.limits.takeForKey(request, response, found.keyId).allowed) return handOn();
    const body = await bodyOf(request).catch(() => null);
    // The client went away mid-body: nothing to answer, and nothing left for express to read.
    if (body === null) return void response.destroy();
    const refused = acceptJsonBody(request, body);
    if (refused || !this.route.acceptsBody(request.body)) return handOn();
    // As express has them, for the Idempotency-Key's scope and fingerprint.
    Object.defineProperty(request, 'path', { value: LAUNCH, writable: true, configurable: true });
    request.originalUrl = LAUNCH;
    const answering = response as ServerResponse & { send(body: string): ServerResponse };
    answering.send = sendText;
    await this.route.answer(request, answering as ServerResponse & AnswerTarget);
  }
}

/** The body, whole (node's parser holds it to its declared length). */
function bodyOf(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('error', reject);
    request.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  });
}

/**
 * Express's `response.send` of a string, as every answer to a launch is sent (the launch's, a
 * replay's, and, once express has the request, `response.json`'s of an error, whose type express's
 * `response.set` has already given its charset): its type (JSON unless set), its length, the text.
 */
function sendText(this: ServerResponse, body: string): ServerResponse {
  if (!this.getHeader('Content-Type')) this.setHeader('Content-Type', JSON_UTF8);
  this.setHeader('Content-Length', Buffer.byteLength(body));
  this.end(body);
  return this;
}
