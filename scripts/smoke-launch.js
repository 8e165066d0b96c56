#!/usr/bin/env node
// The end-to-end launch against a running deployment (docker-compose in CI, or any URL), as a
// partner makes it, with nothing but Node: an account and a test key through the Admin API, a
// sandbox launch, its dispatch completed, a failing one retried, and the events of both listed.
//
//   BASE_URL=http://localhost:3000 ADMIN_TOKEN=... node scripts/smoke-launch.js
//
// SMOKE_TIMEOUT_S bounds the whole run (default 180: the first start of a compose stack is slow).
// Exits 0 and prints one JSON line of what it checked, or exits 1 naming the step that failed.
'use strict';

const base = (process.env.BASE_URL || 'http://localhost:3000').replace(/\/$/, '');
const adminToken = process.env.ADMIN_TOKEN;
const deadline = Date.now() + Number(process.env.SMOKE_TIMEOUT_S || 180) * 1000;

function fail(step, detail) {
  process.stderr.write(`smoke-launch: FAILED at ${step}: ${detail}\n`);
  process.exit(1);
}

async function call(step, method, path, token, body, headers = {}) {
  let response;
  try {
    response = await fetch(base + path, {
      method,
      headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(Math.max(1000, Math.min(30_000, deadline - Date.now()))),
    });
  } catch (error) {
    return { status: 0, body: null, error: error.message };
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    fail(step, `${method} ${path} answered ${response.status} with a body that is not JSON`);
  }
  return { status: response.status, body: parsed };
}

async function expectOk(step, method, path, token, body, headers) {
  const answer = await call(step, method, path, token, body, headers);
  if (answer.status !== 200 && answer.status !== 201) fail(step, `${method} ${path} answered ${answer.status || answer.error}: ${JSON.stringify(answer.body)}`);
  return answer.body.data;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(step, probe) {
  for (;;) {
    const result = await probe();
    if (result) return result;
    if (Date.now() > deadline) fail(step, 'not within SMOKE_TIMEOUT_S');
    await sleep(500);
  }
}

async function main() {
  if (!adminToken) fail('setup', 'ADMIN_TOKEN is not set (the gateway Admin API token)');
  await until('readiness', async () => (await call('readiness', 'GET', '/readyz')).status === 200);

  const account = await expectOk('account', 'POST', '/admin/v1/accounts', adminToken, { name: 'Smoke test', credits: 10 });
  const key = (await expectOk('key', 'POST', `/admin/v1/accounts/${account.id}/keys`, adminToken, { mode: 'test' })).key;
  const campaign = (name) => ({
    channel: 'meta_ads',
    campaign: {
      name,
      objective: 'conversion',
      budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
      schedule: { start_at: '2030-01-01T09:00:00Z', timezone: 'UTC' },
    },
  });

  const launched = await expectOk('launch', 'POST', '/v1/campaigns', key, campaign('Smoke launch'), { 'Idempotency-Key': `smoke-${account.id}` });
  if (launched.status !== 'accepted') fail('launch', `answered the dispatch ${launched.status}, not accepted`);
  const replayed = await expectOk('idempotent replay', 'POST', '/v1/campaigns', key, campaign('Smoke launch'), { 'Idempotency-Key': `smoke-${account.id}` });
  if (replayed.id !== launched.id) fail('idempotent replay', `a second POST with the same key made ${replayed.id}, not ${launched.id}`);
  const completed = await until('completion', async () => {
    const dispatch = await expectOk('completion', 'GET', `/v1/dispatches/${launched.id}`, key);
    if (dispatch.status === 'failed') fail('completion', `the sandbox launch failed: ${JSON.stringify(dispatch.error)}`);
    return dispatch.status === 'completed' ? dispatch : null;
  });

  const failing = await expectOk('failing launch', 'POST', '/v1/campaigns', key, campaign('[sandbox:fail] smoke'));
  await until('failure', async () => (await expectOk('failure', 'GET', `/v1/dispatches/${failing.id}`, key)).status === 'failed');
  const retried = await expectOk('retry', 'POST', `/v1/dispatches/${failing.id}/retry`, key);
  if (retried.status !== 'accepted') fail('retry', `answered ${retried.status}, not accepted`);

  // The Events API in the webhook shape: {id, event, timestamp, data: {dispatch_id, ...}}.
  const events = await until('events', async () => {
    const page = await expectOk('events', 'GET', '/v1/events?limit=100', key);
    const seen = (event, id) => page.some((e) => e.event === event && e.data?.dispatch_id === id);
    return seen('dispatch.completed', launched.id) && seen('dispatch.failed', failing.id) ? page.length : null;
  });
  const { credits_balance } = await expectOk('balance', 'GET', '/v1/account', key);
  // 10 granted; the launch (once, though posted twice), the failing one and its retry (no new charge).
  if (credits_balance !== 8) fail('balance', `credits_balance is ${credits_balance}, not 8`);
  process.stdout.write(
    JSON.stringify({ ok: true, base, dispatch: launched.id, completed_at: completed.completed_at, failed_then_retried: failing.id, events, credits_balance }) +
      '\n',
  );
}

main().catch((error) => fail('unexpected', error.stack || error.message));
