import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventToAppend } from '@campaign-ops/event-store';
import { EventStoreDbEventStore } from '@campaign-ops/adapters/event-store';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { describeWithContainers } from '@campaign-ops/testing/container-testing';
import { startEventStoreDb } from '@campaign-ops/testing/event-store';
import { exportEvents } from './event-export';
import { verifyExport } from './export-verify';
import { REDACTED } from './redaction';

/**
 * Export → verify on a real EventStoreDB, where a container runtime answers (skipped, saying so,
 * where none does; the same round trip runs on the embedded store in event-export.spec.ts).
 */
const event = (type: string, data: Record<string, unknown>): EventToAppend => ({
  id: ulidToUuid(ulid()),
  type,
  data,
  metadata: { version: 1, accountId: 'acct_1' },
});

describeWithContainers('export and verify on EventStoreDB', () => {
  let server: Awaited<ReturnType<typeof startEventStoreDb>> | undefined;
  let store: EventStoreDbEventStore;
  let dir: string;

  beforeAll(async () => {
    server = await startEventStoreDb();
    store = EventStoreDbEventStore.connect(server.connectionString);
    await store.append('account-acct_1', [event('AccountOpened', { accountId: 'acct_1', name: 'Acme ✓', credits: { live: 5, test: 5 } })], {
      expectedRevision: 'no_stream',
    });
    await store.append(
      'dispatch-dsp_1',
      [event('DispatchAccepted', { dispatchId: 'dsp_1', idempotencyKey: 'idem-secret', n: 1.5, nested: { b: [1, 'x', null], a: true } })],
      { expectedRevision: 'no_stream' },
    );
    await store.append('dispatch-dsp_1', [event('DispatchCompleted', { providerResourceId: 'r1', attempt: 1 })], { expectedRevision: 0 });
    dir = mkdtempSync(join(tmpdir(), 'event-export-esdb-'));
  }, 240_000);

  afterAll(async () => {
    await store?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('round-trips an export of the whole store and of a category, secrets redacted', async () => {
    const all = join(dir, 'all.jsonl');
    const manifest = await exportEvents(store, {}, all);
    expect(manifest.count).toBe(3);
    expect(readFileSync(all, 'utf8')).not.toContain('idem-secret');
    expect(readFileSync(all, 'utf8')).toContain(REDACTED);
    await expect(verifyExport(all, store)).resolves.toMatchObject({ ok: true, lines: 3, checked_against_store: true });

    const dispatches = join(dir, 'dispatch.jsonl');
    expect((await exportEvents(store, { category: 'dispatch' }, dispatches)).count).toBe(2);
    await expect(verifyExport(dispatches, store)).resolves.toMatchObject({ ok: true, lines: 2 });
  });

  it('names the line a changed byte is in', async () => {
    const file = join(dir, 'tampered.jsonl');
    await exportEvents(store, {}, file);
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[1] = lines[1].replace('"n":1.5', '"n":1.6');
    writeFileSync(file, lines.join('\n'));
    await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: false, line: 2 });
  });
});
