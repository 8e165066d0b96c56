#!/usr/bin/env node
// A webhook receiver for local development: `npm run receiver -- --key mk_test_...`.
// It registers itself as an endpoint through the API, prints one line per delivery with whether its
// signature verifies, and deletes the endpoint on Ctrl-C or SIGTERM. Plain Node, no build step.
const { createHmac, timingSafeEqual } = require('node:crypto');
const http = require('node:http');
const { parseArgs } = require('node:util');

// The catalog of docs/api.md 5 (WEBHOOK_EVENT_TYPES of libs/webhook-domain; a spec keeps the two equal).
const EVENT_TYPES = ['dispatch.accepted', 'dispatch.completed', 'dispatch.failed', 'connection.active', 'connection.reauth_required'];
const URL_REFUSALS = ['url_invalid', 'url_not_https', 'url_forbidden_host'];
const SIGNATURE_PATTERN = /^sha256=[0-9a-f]{64}$/;
const REQUEST_TIMEOUT_MS = 10_000;

const USAGE = `Usage: npm run receiver -- --key mk_test_... [--api URL] [--port N]
       npm run receiver -- --secret whsec_... [--port N]

  --key     an API key: the receiver registers http://127.0.0.1:PORT/webhooks as a webhook endpoint
            for every event type, keeps its signing secret, and deletes it on Ctrl-C or SIGTERM
  --secret  the signing secret of an endpoint made elsewhere: verify only, register nothing
  --api     the service (default http://localhost:$PORT, PORT as \`npm start\` reads it, else 3000)
  --port    where to listen on 127.0.0.1 (default $RECEIVER_PORT, else 4000)`;

/**
 * Whether `header` is `sha256=<lowercase hex HMAC-SHA256(secret, rawBody)>`, compared in
 * constant time (libs/webhook-signing's rule, repeated here so the receiver needs no build).
 */
function verifySignature(secret, rawBody, header) {
  if (!secret || typeof header !== 'string' || !SIGNATURE_PATTERN.test(header)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(Buffer.from(header.slice('sha256='.length), 'hex'), expected);
}

/** One line for one delivery: event type, event id, the object's id and status, the signature's verdict. */
function describeDelivery(rawBody, signatureVerdict) {
  let event;
  try {
    event = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return `(a body that is not JSON, ${rawBody.length} bytes)  signature ${signatureVerdict}`;
  }
  const data = (event && event.data) || {};
  const objectId = data.dispatch_id || data.connection_id || '-';
  return `${event.event}  ${event.id}  ${objectId} ${data.status || '-'}  signature ${signatureVerdict}`;
}

/** A secret shown only by its start: enough to tell two apart, not enough to sign with. */
const masked = (secret) => `${secret.slice(0, 'whsec_'.length + 4)}…`;

async function callApi(api, key, method, path, body) {
  const response = await fetch(new URL(path, api), {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const answer = await response.json().catch(() => ({}));
  return { status: response.status, answer };
}

function parseOptions(argv, env) {
  const { values } = parseArgs({
    args: argv,
    options: {
      key: { type: 'string' },
      secret: { type: 'string' },
      api: { type: 'string', default: `http://localhost:${env.PORT || 3000}` },
      port: { type: 'string', default: env.RECEIVER_PORT || '4000' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const port = Number(values.port);
  if ((!values.key && !values.secret) || !Number.isInteger(port) || port < 0 || port > 65535) return values.help ? { help: true } : null;
  return { ...values, port };
}

async function main() {
  let options;
  try {
    options = parseOptions(process.argv.slice(2), process.env);
  } catch (error) {
    console.error(error.message);
  }
  if (!options || options.help) {
    (options ? console.log : console.error)(USAGE);
    process.exit(options ? 0 : 2);
  }

  let secret = options.secret || null;
  let endpointId = null;
  let registering = Promise.resolve();
  const seen = new Set();

  const server = http.createServer((request, response) => {
    if (request.method !== 'POST') {
      // GET answers 200 once deliveries can be verified: scripts wait for it before launching.
      response.writeHead(secret ? 200 : 503, { 'Content-Type': 'text/plain' }).end(secret ? 'ready\n' : 'registering\n');
      return;
    }
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const valid = verifySignature(secret, rawBody, request.headers['x-service-signature']);
      const eventId = request.headers['x-service-event-id'];
      const repeated = valid && eventId && seen.has(eventId) ? '  (again: the same event id)' : '';
      if (valid && eventId) seen.add(eventId);
      console.log(describeDelivery(rawBody, valid ? 'verified' : 'INVALID') + repeated);
      // A receiver must not act on an event whose signature fails: 401 makes the service retry it.
      response.writeHead(valid ? 204 : 401).end();
    });
  });

  await new Promise((listening, failed) => {
    server.once('error', failed);
    server.listen(options.port, '127.0.0.1', listening);
  });
  const url = `http://127.0.0.1:${server.address().port}/webhooks`;

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeAllConnections();
    await registering; // a signal during the registration still deletes what it made
    if (endpointId) {
      try {
        const { status, answer } = await callApi(options.api, options.key, 'DELETE', `/v1/webhooks/${endpointId}`);
        if (status !== 200) throw new Error(`${status} ${(answer.error && answer.error.code) || ''}`.trim());
        console.log(`deleted endpoint ${endpointId}`);
      } catch (error) {
        console.error(`could not delete endpoint ${endpointId} (${error.message}): DELETE ${options.api}/v1/webhooks/${endpointId} removes it`);
      }
    }
    process.exit(0);
  };
  // `on`, not `once`: Ctrl-C under `npm run` arrives twice (from the terminal and forwarded by npm).
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  if (secret) {
    console.log(`listening on ${url}, verifying with the signing secret ${masked(secret)}`);
    return;
  }

  let registration;
  try {
    const request = callApi(options.api, options.key, 'POST', '/v1/webhooks', { url, events: EVENT_TYPES });
    registering = request.then(
      (done) => {
        if (done.status === 200 && done.answer.data) endpointId = done.answer.data.id;
      },
      () => {},
    );
    registration = await request;
  } catch (error) {
    console.error(
      `cannot reach the service at ${options.api} (${error.cause ? error.cause.code || error.cause.message : error.message}): is \`npm start\` running?`,
    );
    process.exit(1);
  }
  if (stopping) return;
  const { status, answer } = registration;
  if (status !== 200 || !answer.data) {
    const code = answer.error ? answer.error.code : `HTTP ${status}`;
    console.error(`the service refused to register ${url}: ${code}${answer.error ? ` (${answer.error.message})` : ''}`);
    if (URL_REFUSALS.includes(code)) {
      console.error('A local receiver needs the service started with WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_NETWORKS=true');
      console.error('(for local development only), e.g.: WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_NETWORKS=true npm start');
    }
    process.exit(1);
  }
  endpointId = answer.data.id;
  secret = answer.data.signing_secret;
  console.log(`listening on ${url}: endpoint ${endpointId} for ${EVENT_TYPES.join(', ')}; signing secret ${masked(secret)}`);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}

module.exports = { EVENT_TYPES, verifySignature, describeDelivery };
