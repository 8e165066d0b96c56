import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fs = require('node:fs');
import workerThreads = require('node:worker_threads');
import Database from 'better-sqlite3';
import canonicalize from 'canonicalize';
import { EventToAppend } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { EmptyExportError, ExportFilter, ExportManifest, exportEvents, manifestFileOf } from './event-export';
import { GENESIS_HASH, LINE_FIELDS, sealLine } from './export-line';
import { verifyExport } from './export-verify';
import { PAGE_SPAN } from './prepared-pages';
import { REDACTED } from './redaction';

const event = (type: string, data: Record<string, unknown>, metadata: Record<string, unknown> = {}): EventToAppend => ({
  id: ulidToUuid(ulid()),
  type,
  data,
  metadata: { version: 1, ...metadata },
});

const SEALED_SECRET = 'v1.SEALED-SIGNING-SECRET-0123456789';
const KEY_HASH = 'b1946ac92492d2347c6235b4d2611184aa6b1d9e1c1e0f5f3a8b1c2d3e4f5a6b';
const IDEMPOTENCY_KEY = 'idem-key-that-unseals-kept-answers';

describe('export and verify (on the embedded event store)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let file: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'event-export-'));
    store = SqliteEventStore.open(join(dir, 'events.sqlite'));
    file = join(dir, 'export.jsonl');
    await store.append(
      'account-acct_1',
      [
        event(
          'AccountOpened',
          { accountId: 'acct_1', name: 'Acme ✓', credits: { live: 5, test: 5 }, openedAt: '2026-01-01T00:00:00.000Z' },
          { accountId: 'acct_1' },
        ),
      ],
      { expectedRevision: 'no_stream' },
    );
    await store.append(
      'account-acct_1',
      [event('ApiKeyIssued', { keyId: 'key_1', mode: 'test', keyHash: KEY_HASH, issuedAt: '2026-01-01T00:00:01.000Z' }, { accountId: 'acct_1' })],
      { expectedRevision: 0 },
    );
    await store.append(
      'dispatch-dsp_1',
      [
        event(
          'DispatchAccepted',
          {
            dispatchId: 'dsp_1',
            accountId: 'acct_1',
            idempotencyKey: IDEMPOTENCY_KEY,
            n: 1.5,
            nested: { b: [1, 'x', null], a: true, '10': 'ten', '2': 'two', é: 'e' },
          },
          { accountId: 'acct_1', requestId: 'req_1' },
        ),
      ],
      { expectedRevision: 'no_stream' },
    );
    await store.append('webhook-whk_1', [event('WebhookEndpointCreated', { endpointId: 'whk_1', sealedSecret: SEALED_SECRET }, { accountId: 'acct_1' })], {
      expectedRevision: 'no_stream',
    });
    await store.append(
      'dispatch-dsp_2',
      [event('DispatchAccepted', { dispatchId: 'dsp_2', accountId: 'acct_2', idempotencyKey: null }, { accountId: 'acct_2' })],
      { expectedRevision: 'no_stream' },
    );
    await store.append('dispatch-dsp_1', [event('DispatchCompleted', { providerResourceId: 'r1', attempt: 1 }, { accountId: 'acct_1' })], {
      expectedRevision: 0,
    });
    await store.append('webhook-whk_1', [event('WebhookSecretRotated', { sealedSecret: `${SEALED_SECRET}-2` }, { accountId: 'acct_1' })], {
      expectedRevision: 0,
    });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const linesOf = (path: string) =>
    readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((text) => JSON.parse(text));

  it('writes every event in commit order, its fields in order, each line sealing the one before (checked here with node:crypto and canonicalize)', async () => {
    const manifest = await exportEvents(store, {}, file);

    const lines = linesOf(file);
    expect(lines.map((line) => [line.stream_id, line.revision, line.type])).toEqual([
      ['account-acct_1', 0, 'AccountOpened'],
      ['account-acct_1', 1, 'ApiKeyIssued'],
      ['dispatch-dsp_1', 0, 'DispatchAccepted'],
      ['webhook-whk_1', 0, 'WebhookEndpointCreated'],
      ['dispatch-dsp_2', 0, 'DispatchAccepted'],
      ['dispatch-dsp_1', 1, 'DispatchCompleted'],
      ['webhook-whk_1', 1, 'WebhookSecretRotated'],
    ]);
    const stored = await store.readAll({ maxCount: 100 });
    let prev = GENESIS_HASH;
    lines.forEach((line, i) => {
      expect(Object.keys(line)).toEqual(LINE_FIELDS);
      expect(line).toMatchObject({ event_id: stored[i].id, version: 1, metadata: stored[i].metadata, recorded_at: stored[i].occurredAt, prev_hash: prev });
      const { hash, ...unhashed } = line;
      expect(hash).toBe(
        createHash('sha256')
          .update(`${prev}\n${canonicalize(unhashed)}`)
          .digest('hex'),
      );
      prev = hash;
    });
    expect(lines[2].data).toEqual({
      dispatchId: 'dsp_1',
      accountId: 'acct_1',
      idempotencyKey: REDACTED,
      n: 1.5,
      nested: { b: [1, 'x', null], a: true, '10': 'ten', '2': 'two', é: 'e' },
    });
    expect(manifest).toMatchObject({ count: 7, last_position: stored[6].position, read_up_to: stored[6].position, final_hash: prev, filter: {} });
    expect(JSON.parse(readFileSync(manifestFileOf(file), 'utf8'))).toEqual(manifest);
    expect(existsSync(`${file}.partial`)).toBe(false);
  });

  it('puts the file and the manifest on disk before giving them their names, then syncs the directory for the renames', async () => {
    const steps: string[] = [];
    const rename = fs.renameSync;
    const spies = [
      jest.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, done: (error: Error | null) => void) => {
        steps.push('datasync');
        done(null);
      }) as never),
      jest.spyOn(fs, 'fdatasyncSync').mockImplementation(() => void steps.push('datasync')),
      jest.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
        steps.push(`rename ${String(from).slice(dir.length + 1)} -> ${String(to).slice(dir.length + 1)}`);
        rename(from, to);
      }),
      jest.spyOn(fs, 'fsyncSync').mockImplementation(() => void steps.push('fsync')),
    ];
    try {
      await exportEvents(store, {}, file);
    } finally {
      spies.forEach((spy) => spy.mockRestore());
    }
    expect(steps).toEqual([
      'datasync',
      'rename export.jsonl.partial -> export.jsonl',
      'datasync',
      'rename export.jsonl.manifest.json.partial -> export.jsonl.manifest.json',
      'fsync',
    ]);
    expect(linesOf(file)).toHaveLength(7);
    expect(JSON.parse(readFileSync(manifestFileOf(file), 'utf8'))).toMatchObject({ count: 7 });
  });

  it('never writes signing secrets, key hashes or idempotency keys, and still verifies against the store', async () => {
    await exportEvents(store, {}, file);

    const text = readFileSync(file, 'utf8');
    for (const secret of [SEALED_SECRET, KEY_HASH, IDEMPOTENCY_KEY]) expect(text).not.toContain(secret);
    expect(linesOf(file).find((line) => line.type === 'WebhookSecretRotated').data.sealedSecret).toBe(REDACTED);
    // A null is nothing to hide, and stays as it is.
    expect(linesOf(file).find((line) => line.stream_id === 'dispatch-dsp_2').data.idempotencyKey).toBeNull();
    await expect(verifyExport(file, store)).resolves.toEqual({
      ok: true,
      lines: 7,
      final_hash: expect.any(String),
      manifest: 'matches',
      checked_against_store: true,
      complete_against_store: true,
      selection: { filter: {}, read_up_to: '7' },
    });
  });

  it.each([
    [
      { stream: 'dispatch-dsp_1' },
      [
        ['dispatch-dsp_1', 0],
        ['dispatch-dsp_1', 1],
      ],
    ],
    [
      { category: 'dispatch' },
      [
        ['dispatch-dsp_1', 0],
        ['dispatch-dsp_2', 0],
        ['dispatch-dsp_1', 1],
      ],
    ],
    [{ account: 'acct_2' }, [['dispatch-dsp_2', 0]]],
    [
      { account: 'acct_1', category: 'webhook' },
      [
        ['webhook-whk_1', 0],
        ['webhook-whk_1', 1],
      ],
    ],
  ])('selects by %j', async (filter, expected) => {
    const manifest = await exportEvents(store, filter, file);
    expect(linesOf(file).map((line) => [line.stream_id, line.revision])).toEqual(expected);
    expect(manifest.count).toBe(expected.length);
    await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: true });
  });

  it('selects a time range: from inclusive, to exclusive', async () => {
    const all = await store.readAll({ maxCount: 100 });
    // Appends in one turn share a time: give two of them their own by appending later.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const later = await store.append('dispatch-dsp_3', [event('DispatchAccepted', { dispatchId: 'dsp_3' })], { expectedRevision: 'no_stream' });
    const [stored] = await store.readStream('dispatch-dsp_3');
    expect(later.position).toBe(stored.position);

    await exportEvents(store, { from: stored.occurredAt }, file);
    expect(linesOf(file).map((line) => line.stream_id)).toEqual(['dispatch-dsp_3']);
    await exportEvents(store, { to: stored.occurredAt }, file);
    expect(linesOf(file)).toHaveLength(all.length);
    await expect(exportEvents(store, { from: 'yesterday' }, file)).rejects.toThrow(/--from is not an ISO 8601 time/);
  });

  it('exports an empty selection as an empty file whose final hash is the genesis hash', async () => {
    const manifest = await exportEvents(store, { category: 'nothing' }, file);
    expect(readFileSync(file, 'utf8')).toBe('');
    expect(manifest).toMatchObject({ count: 0, last_position: null, final_hash: GENESIS_HASH });
    await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: true, lines: 0 });
  });

  it.each([[{ category: 'nothing' }], [{ stream: 'dispatch-dsp_1', account: 'acct_2' }], [{ from: '2999-01-01T00:00:00Z' }]])(
    'refuses the empty selection %j when told to, naming the filter, and writes nothing',
    async (filter) => {
      await exportEvents(store, {}, file);
      const earlier = readFileSync(file, 'utf8');
      const refused = exportEvents(store, filter, file, undefined, { refuseEmpty: true });
      await expect(refused).rejects.toThrow(EmptyExportError);
      await expect(refused).rejects.toThrow(
        `no event matches ${Object.entries(filter)
          .map(([name, value]) => `--${name} ${value.replace('Z', '.000Z')}`)
          .join(' ')}`,
      );
      expect(readFileSync(file, 'utf8')).toBe(earlier);
      expect(existsSync(`${file}.partial`)).toBe(false);
      // A selection that holds events is exported as ever.
      expect((await exportEvents(store, { category: 'dispatch' }, file, undefined, { refuseEmpty: true })).count).toBe(3);
    },
  );

  describe('tampering', () => {
    /** As a forger who knows the format writes them: every hash recomputed, every line as an export writes it. Answers the final hash. */
    function writeResealed(lines: any[]): string {
      let prev = GENESIS_HASH;
      const texts = lines.map(({ hash: _hash, ...line }) => {
        const sealed = sealLine({ ...line, prev_hash: prev });
        prev = sealed.line.hash;
        return `${sealed.text}\n`;
      });
      writeFileSync(file, texts.join(''));
      return prev;
    }

    /** The file with one byte changed (xor 1): byte `offset` of line `index` (0-based). */
    function flipped(original: Buffer, starts: number[], index: number, offset: number): Buffer {
      const copy = Buffer.from(original);
      copy[starts[index] + offset] ^= 0x01;
      return copy;
    }

    it('fails on any byte changed, every byte of every line, its newline included, naming that line', async () => {
      await exportEvents(store, {}, file);
      const original = readFileSync(file);
      const lines = original.toString('utf8').trimEnd().split('\n');
      const starts = lines.map((_, i) => lines.slice(0, i).reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0));
      let tried = 0;
      for (let index = 0; index < lines.length; index++) {
        // Every byte of the line and the newline that ends it.
        for (let offset = 0; offset <= Buffer.byteLength(lines[index]); offset++) {
          writeFileSync(file, flipped(original, starts, index, offset));
          const result = await verifyExport(file);
          if (result.ok || result.line !== index + 1) throw new Error(`a flip at byte ${offset} of line ${index + 1} gave ${JSON.stringify(result)}`);
          tried++;
        }
      }
      expect(tried).toBe(original.length);
      writeFileSync(file, original);
      await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: true });
    }, 120_000);

    it('fails on changes that keep every value (a space, an escape, another spelling of a number), naming the line', async () => {
      await exportEvents(store, {}, file);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const edits: Array<[number, (text: string) => string]> = [
        [0, (text) => text.replace('"stream_id":', '"stream_id": ')],
        [0, (text) => text.replace('Acme', '\\u0041cme')],
        [2, (text) => text.replace('"n":1.5', '"n":1.50')],
        [3, (text) => `${text} `],
        [2, (text) => text.replace('"accountId":"acct_1","dispatchId":"dsp_1"', '"dispatchId":"dsp_1","accountId":"acct_1"')],
        [2, (text) => text.replace('"10":"ten","2":"two"', '"2":"two","10":"ten"')],
      ];
      for (const [index, edit] of edits) {
        const changed = [...lines];
        changed[index] = edit(changed[index]);
        expect(changed[index]).not.toBe(lines[index]);
        writeFileSync(file, `${changed.join('\n')}\n`);
        await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: index + 1, reason: expect.stringContaining('not as an export writes it') });
      }
    });

    it('names the line when a line is removed, moved or added, and a truncated end by the manifest', async () => {
      await exportEvents(store, {}, file);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const write = (changed: string[]) => writeFileSync(file, `${changed.join('\n')}\n`);

      write([...lines.slice(0, 2), ...lines.slice(3)]);
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: 3, reason: expect.stringContaining('prev_hash') });
      write([lines[1], lines[0], ...lines.slice(2)]);
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: 1 });
      write([...lines, lines[6]]);
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: 8 });
      write(lines.slice(0, 5));
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: 6, reason: 'the manifest counts 7 lines, the file has 5' });
      writeFileSync(file, lines.join('\n'));
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: 7, reason: expect.stringContaining('newline') });
    });

    it('finds a forged export with an intact chain by comparing it with the store, naming the line and the field', async () => {
      await exportEvents(store, {}, file);
      const lines = linesOf(file);
      const forge = (index: number, change: (line: Record<string, any>) => void) => {
        const copy = structuredClone(lines);
        change(copy[index]);
        writeResealed(copy);
        rmSync(manifestFileOf(file), { force: true });
      };

      const noManifest = { allowMissingManifest: true };
      forge(5, (line) => (line.data.providerResourceId = 'r2'));
      // Without its manifest a file does not pass, unless asked to check what can be checked.
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: false, line: null, reason: expect.stringContaining('manifest.json is missing') });
      await expect(verifyExport(file, undefined, undefined, noManifest)).resolves.toMatchObject({ ok: true, manifest: 'absent' });
      await expect(verifyExport(file, store, undefined, noManifest)).resolves.toEqual({ ok: false, line: 6, reason: 'data differs from the stored event' });
      forge(2, (line) => (line.metadata.requestId = 'req_2'));
      await expect(verifyExport(file, store, undefined, noManifest)).resolves.toEqual({ ok: false, line: 3, reason: 'metadata differs from the stored event' });
      forge(1, (line) => (line.revision = 5));
      await expect(verifyExport(file, store, undefined, noManifest)).resolves.toMatchObject({
        ok: false,
        line: 2,
        reason: expect.stringContaining('no event at revision 5'),
      });
      forge(0, (line) => (line.recorded_at = '2020-01-01T00:00:00.000Z'));
      await expect(verifyExport(file, store, undefined, noManifest)).resolves.toMatchObject({
        ok: false,
        line: 1,
        reason: expect.stringContaining('recorded_at'),
      });
    });

    it('finds a line dropped, moved or added even when the chain and the manifest were made again to match, by walking the store as the export did', async () => {
      const manifest = await exportEvents(store, {}, file);
      const lines = linesOf(file);
      const rewrite = (kept: any[]) => {
        const finalHash = writeResealed(kept);
        writeFileSync(manifestFileOf(file), JSON.stringify({ ...manifest, count: kept.length, final_hash: finalHash }));
      };
      await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: true, complete_against_store: true });

      rewrite([...lines.slice(0, 3), ...lines.slice(4)]);
      // The chain and the manifest hold, and every line is as stored: only the walk finds the gap.
      await expect(verifyExport(file)).resolves.toMatchObject({ ok: true });
      await expect(verifyExport(file, store, undefined, { allowMissingManifest: true })).resolves.toMatchObject({
        ok: false,
        line: 4,
        reason: expect.stringContaining('a line was dropped, added or moved'),
      });
      rewrite([lines[1], lines[0], ...lines.slice(2)]);
      await expect(verifyExport(file, store)).resolves.toMatchObject({
        ok: false,
        line: 1,
        reason: expect.stringContaining(`${lines[0].stream_id}@0 here, the file ${lines[1].stream_id}`),
      });
      rewrite(lines.slice(0, 6));
      await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: false, line: 7, reason: expect.stringContaining('which the file does not hold') });
      rewrite([...lines, lines[6]]);
      await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: false, line: 8, reason: expect.stringContaining('the file goes on') });
      // A manifest that is not one an export writes is named, not a crash.
      rewrite(lines);
      const written = JSON.parse(readFileSync(manifestFileOf(file), 'utf8'));
      for (const [broken, why] of [
        [null, 'not a JSON object'],
        [{ ...written, read_up_to: 'x' }, 'read_up_to is not a position'],
        [{ ...written, count: -1 }, 'count is not a whole number'],
      ] as const) {
        writeFileSync(manifestFileOf(file), JSON.stringify(broken));
        await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: false, line: null, reason: expect.stringContaining(why) });
      }
      // The last line's event is not the one the manifest says the export ended at.
      rewrite(lines);
      writeFileSync(manifestFileOf(file), JSON.stringify({ ...JSON.parse(readFileSync(manifestFileOf(file), 'utf8')), last_position: '3' }));
      await expect(verifyExport(file, store)).resolves.toMatchObject({
        ok: false,
        line: 7,
        reason: expect.stringContaining("the manifest's last_position 3 is not"),
      });
    });
  });

  it("docs/operations.md's independent verifier (plain Node, nothing from this project) accepts an export and names a tampered line", async () => {
    const guide = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operations.md'), 'utf8');
    const snippet = /<!-- independent-verifier -->\s*```js\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(snippet).toBeDefined();
    const script = join(dir, 'verify-export.js');
    writeFileSync(script, snippet!);
    await exportEvents(store, {}, file);
    const manifest = JSON.parse(readFileSync(manifestFileOf(file), 'utf8'));

    expect(execFileSync(process.execPath, [script, file], { encoding: 'utf8' })).toBe(`7 lines, chain intact, final hash ${manifest.final_hash}\n`);

    const lines = readFileSync(file, 'utf8').split('\n');
    lines[3] = lines[3].replace('WebhookEndpointCreated', 'WebhookEndpointCreatee');
    writeFileSync(file, lines.join('\n'));
    let failure: { status: number; stderr: string } | undefined;
    try {
      execFileSync(process.execPath, [script, file], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      failure = error as { status: number; stderr: string };
    }
    expect(failure?.status).toBe(1);
    expect(failure?.stderr).toBe('line 4: broken chain\n');
  });

  describe('with reader threads', () => {
    /** How many reader threads the exports made meanwhile start (the thread's code is this lib's export-reader.worker.ts). */
    function countThreads() {
      const Worker = workerThreads.Worker;
      const spy = jest.spyOn(workerThreads, 'Worker').mockImplementation((...args) => new Worker(...args));
      return { started: () => spy.mock.calls.length, restore: () => spy.mockRestore() };
    }

    /** The store's flags, read on a connection of the spec's own. */
    function flags(path: string): Array<number | null> {
      const raw = new Database(path, { readonly: true });
      try {
        return raw.prepare('SELECT canonical FROM events ORDER BY position').pluck().all() as Array<number | null>;
      } finally {
        raw.close();
      }
    }

    /** Exports the same selection in this thread and with `readers` threads: the same bytes, the same manifest but its time, and it verifies. */
    async function sameWithThreads(on: SqliteEventStore, filter: ExportFilter, readers = 2) {
      const inProcess = join(dir, 'in-process.jsonl');
      const threaded = join(dir, 'threads.jsonl');
      const threads = countThreads();
      try {
        const manifest = await exportEvents(on, filter, inProcess, undefined, { readers: 1 });
        expect(threads.started()).toBe(0);
        const threadedManifest = await exportEvents(on, filter, threaded, undefined, { readers });
        expect(threads.started()).toBe(Math.min(readers, Math.ceil(Number(manifest.read_up_to) / PAGE_SPAN)));
        expect(readFileSync(threaded).equals(readFileSync(inProcess))).toBe(true);
        expect({ ...threadedManifest, file: inProcess, exported_at: manifest.exported_at }).toEqual(manifest);
      } finally {
        threads.restore();
      }
      // The same bytes: verifying one verifies both.
      await expect(verifyExport(inProcess, on)).resolves.toMatchObject({ ok: true, lines: expect.any(Number), complete_against_store: true });
      const manifest = JSON.parse(readFileSync(manifestFileOf(inProcess), 'utf8')) as ExportManifest;
      return { manifest, text: readFileSync(inProcess, 'utf8') };
    }

    /** A copy of a JSON value with every object's keys sorted, as a decide's events are appended. */
    const sorted = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(sorted)
        : value !== null && typeof value === 'object'
          ? Object.fromEntries(
              Object.keys(value)
                .sort()
                .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
            )
          : value;

    /** The line's fields but its event id, time and hashes, with data and metadata as the line's text holds them. */
    const contentOf = (text: string) => {
      const line = JSON.parse(text);
      return [line.stream_id, line.revision, line.type, line.version, /,"data":([^]*),"recorded_at":/.exec(text)![1]];
    };

    it('exports events appended with unsorted keys (not flagged) as the same lines as the same events appended sorted (flagged)', async () => {
      const unsorted = [
        [
          'dispatch-dsp_1',
          'DispatchAccepted',
          { dispatchId: 'dsp_1', idempotencyKey: IDEMPOTENCY_KEY, campaign: { name: 'Spring ✓', budget: 1.5, zones: ['b', 'a'] }, accountId: 'acct_1' },
          { version: 1, accountId: 'acct_1', requestId: 'req_1' },
        ],
        [
          'dispatch-dsp_2',
          'DispatchAccepted',
          { idempotencyKey: null, dispatchId: 'dsp_2', note: '"idempotencyKey":"not a key"' },
          { version: 1, accountId: 'acct_2' },
        ],
        [
          'dispatch-dsp_1',
          'DispatchCharged',
          { dispatch: { idempotencyKey: IDEMPOTENCY_KEY, dispatchId: 'dsp_1' }, amount: 1, '10': 'x', '9': 'y' },
          { version: 1, accountId: 'acct_1' },
        ],
        [
          'webhook-whk_1',
          'WebhookEndpointCreated',
          { sealedSecret: SEALED_SECRET, endpointId: 'whk_1', url: 'https://example.com/\u2028"' },
          { version: 1, accountId: 'acct_1' },
        ],
        ['account-acct_1', 'ApiKeyIssued', { mode: 'live', keyHash: KEY_HASH, keyId: 'key_2', n: -0, big: 1e21 }, { version: 1, accountId: 'acct_1' }],
      ] as const;
      const exported: string[][] = [];
      for (const [name, sort] of [
        ['unsorted', false],
        ['sorted', true],
      ] as const) {
        const path = join(dir, `${name}.sqlite`);
        const other = SqliteEventStore.open(path);
        try {
          for (const [stream, type, data, metadata] of unsorted) {
            await other.append(
              stream,
              [
                {
                  id: ulidToUuid(ulid()),
                  type,
                  data: sort ? (sorted(data) as Record<string, unknown>) : data,
                  metadata: sort ? (sorted(metadata) as Record<string, unknown>) : metadata,
                },
              ],
              { expectedRevision: 'any' },
            );
          }
          // Integer-like keys ("10", "9") are never in sorted order in JavaScript: that event is never flagged.
          expect(flags(path)).toEqual(sort ? [1, 1, null, 1, 1] : [null, null, null, null, null]);
          // The texts that are not JCS read by reader threads, the others in this thread.
          const out = join(dir, `${name}.jsonl`);
          await exportEvents(other, {}, out, undefined, { readers: sort ? 1 : 2 });
          exported.push(readFileSync(out, 'utf8').trimEnd().split('\n'));
          await expect(verifyExport(out, other)).resolves.toMatchObject({ ok: true, lines: unsorted.length, complete_against_store: true });
        } finally {
          await other.close();
        }
      }
      const [fromUnsorted, fromSorted] = exported;
      expect(fromUnsorted.map(contentOf)).toEqual(fromSorted.map(contentOf));
      // As JCS, and redacted.
      fromSorted.forEach((text, i) => {
        const line = JSON.parse(text);
        expect(contentOf(text)[4]).toBe(`${canonicalize(line.data)},"metadata":${canonicalize(unsorted[i][3])}`);
      });
      for (const secret of [SEALED_SECRET, KEY_HASH, IDEMPOTENCY_KEY]) expect(exported.flat().join('\n')).not.toContain(secret);
      expect(JSON.parse(fromSorted[2]).data.dispatch.idempotencyKey).toBe(REDACTED);
      expect(JSON.parse(fromSorted[1]).data.note).toBe('"idempotencyKey":"not a key"');
    });

    describe('over several pages of positions', () => {
      const TOTAL = 2 * PAGE_SPAN + 345;
      const ROUND = 50;

      /** Event i of the big store: flagged or not, secret or not, in one of many streams of three categories. */
      function bigEvent(i: number): [string, EventToAppend] {
        const category = (['dispatch', 'webhook', 'account'] as const)[i % 3];
        const accountId = `acct_${i % 4}`;
        const data =
          category === 'dispatch'
            ? { dispatchId: `dsp_${i}`, idempotencyKey: i % 5 === 0 ? null : `idem-${i}`, text: `é ${i} "${i}"` }
            : category === 'webhook'
              ? { sealedSecret: `secret-${i}`, endpointId: `whk_${i % 7}` }
              : { name: `Acme ${i}`, credits: { test: i, live: 0 } };
        const type = { dispatch: 'DispatchAccepted', webhook: 'WebhookSecretRotated', account: 'AccountRenamed' }[category];
        const metadata = { version: 1, accountId };
        // About two in five appended with their keys unsorted (not flagged), the others sorted.
        const unsortedEvent = i % 3 === 1 || i % 7 === 0;
        const shaped = (value: Record<string, unknown>) => (unsortedEvent ? value : (sorted(value) as Record<string, unknown>));
        return [`${category}-${i % 37}`, { id: ulidToUuid(ulid()), type, data: shaped(data), metadata: shaped(metadata) }];
      }

      async function appendBig(from: number, to: number): Promise<void> {
        for (let round = from; round < to; round += ROUND) {
          // One turn's appends share a commit; the streams interleave in commit order.
          await Promise.all(
            Array.from({ length: Math.min(ROUND, to - round) }, (_, k) => {
              const [stream, appended] = bigEvent(round + k);
              return store.append(stream, [appended], { expectedRevision: 'any' });
            }),
          );
        }
      }

      it('writes the same bytes with reader threads as in this thread, keeping commit order and the chain across pages', async () => {
        await appendBig(0, TOTAL);
        const all = await store.readAll({ maxCount: 10_000 });
        expect(all.length).toBeGreaterThan(2 * PAGE_SPAN);
        expect(new Set(flags(join(dir, 'events.sqlite')))).toEqual(new Set([1, null]));

        // Three pages, two reader threads: one reads the first and the third.
        const { manifest, text } = await sameWithThreads(store, {}, 2);
        const lines = text
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line));
        expect(lines.map((line) => line.event_id)).toEqual(all.map((event) => event.id));
        const unchained: number[] = [];
        let prev = GENESIS_HASH;
        lines.forEach(({ hash, ...unhashed }, i) => {
          if (
            unhashed.prev_hash !== prev ||
            hash !==
              createHash('sha256')
                .update(`${prev}\n${canonicalize(unhashed)}`)
                .digest('hex')
          )
            unchained.push(i + 1);
          prev = hash;
        });
        expect(unchained).toEqual([]);
        expect(manifest).toMatchObject({
          count: all.length,
          final_hash: prev,
          last_position: all[all.length - 1].position,
          read_up_to: all[all.length - 1].position,
        });
        expect(text).not.toMatch(/secret-\d|idem-\d/);
      }, 60_000);

      it('selects across pages as in this thread, and reads only what the store held when the export began', async () => {
        await appendBig(0, TOTAL);
        const filter = { category: 'dispatch', account: 'acct_3' };
        const inProcess = await exportEvents(store, filter, join(dir, 'in-process.jsonl'), undefined, { readers: 1 });
        const all = await store.readAll({ maxCount: 10_000 });
        expect(inProcess.count).toBe(all.filter((event) => event.streamId.startsWith('dispatch-') && event.metadata.accountId === 'acct_3').length);

        // Appends made while exports run (some of them selected) are in neither, with threads or without.
        const threads = countThreads();
        const again = join(dir, 'in-process-again.jsonl');
        try {
          const exporting = [exportEvents(store, filter, file, undefined, { readers: 2 }), exportEvents(store, filter, again, undefined, { readers: 1 })];
          await appendBig(TOTAL, TOTAL + 2 * ROUND);
          for (const manifest of await Promise.all(exporting)) {
            expect(manifest).toMatchObject({
              count: inProcess.count,
              final_hash: inProcess.final_hash,
              last_position: inProcess.last_position,
              read_up_to: inProcess.read_up_to,
            });
          }
          expect(threads.started()).toBe(2);
        } finally {
          threads.restore();
        }
        for (const written of [file, again]) expect(readFileSync(written).equals(readFileSync(join(dir, 'in-process.jsonl')))).toBe(true);
        expect((await store.readAll({ maxCount: 10_000 })).length).toBe(all.length + 2 * ROUND);
        await expect(verifyExport(file, store)).resolves.toMatchObject({ ok: true, lines: inProcess.count, complete_against_store: true });

        // An event committed (by another connection) once the first page is written is not read by the pages after it.
        const other = new Database(join(dir, 'events.sqlite'));
        try {
          let pagesWritten = 0;
          const late = other.prepare(
            "INSERT INTO events (event_id, stream_id, revision, type, data, metadata, occurred_at) VALUES (?, 'dispatch-late', 0, 'DispatchAccepted', '{}', '{}', ?)",
          );
          const everything = await exportEvents(store, {}, file, () => void (pagesWritten++ === 0 && late.run(ulidToUuid(ulid()), new Date().toISOString())), {
            readers: 1,
          });
          expect(pagesWritten).toBeGreaterThan(2);
          const held = (await store.readAll({ maxCount: 10_000 })).filter((event) => BigInt(event.position) <= BigInt(everything.read_up_to!));
          expect(held).toHaveLength(all.length + 2 * ROUND);
          expect(
            readFileSync(file, 'utf8')
              .trimEnd()
              .split('\n')
              .map((line) => JSON.parse(line).event_id),
          ).toEqual(held.map((event) => event.id));
          expect((await store.readStream('dispatch-late')).length).toBe(1);
        } finally {
          other.close();
        }
      }, 60_000);
    });
  });
});
