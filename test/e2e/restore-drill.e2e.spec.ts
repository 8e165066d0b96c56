/**
 * The restore drill on the embedded stores: a standalone process launches campaigns, the ops
 * command line exports the dispatch events and backs the stores up while the process runs and
 * takes more launches, the process stops, DATA_DIR is wiped, the backup is restored, the export
 * verifies against the restored event store, and the process started again answers for the
 * dispatches launched before the backup.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ops, runOps } from '../support/ops-cli';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-restore-drill-0123';
const STORE_FILES = ['bus.sqlite', 'events.sqlite', 'generated-keys.json', 'read-models.sqlite'];

describe('the restore drill: backup while running, wipe, restore, verify, serve again', () => {
  let dir: string;
  let dataDir: string;
  let service: ServiceProcess;
  const env = () => ({ DATA_DIR: dataDir });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'campaign-ops-restore-drill-'));
    dataDir = join(dir, 'data');
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('restores a backup taken under load into an empty DATA_DIR, against which the export verifies and the service serves its dispatches', async () => {
    service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: dataDir });
    const keys = await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN), 'Drill');
    const partner = new PartnerClient(service.url, keys.testKey);
    const launch = async (name: string) => {
      const answer = await partner.post('/v1/campaigns', sandboxCampaign(name));
      expect(answer.status).toBe(200);
      return answer.body.data.id as string;
    };
    const launched: string[] = [];
    for (let i = 0; i < 4; i++) launched.push(await launch(`Drill ${i}`));
    for (const id of launched)
      await eventually(async () => (await partner.get(`/v1/dispatches/${id}`)).body.data?.status === 'completed', 30_000, `${id} to complete`);

    const exported = join(dir, 'dispatches.jsonl');
    const manifest = await ops(['export', '--category', 'dispatch', '--out', exported, '--json'], env());
    expect(manifest.count).toBeGreaterThanOrEqual(launched.length * 2);

    // The backup is taken while the service goes on writing: more launches meanwhile.
    const backup = join(dir, 'backup');
    const [backedUp] = await Promise.all([runOps(['backup', '--out', backup, '--json'], env(), 60_000), launch('During 1'), launch('During 2')]);
    expect([backedUp.code, backedUp.stderr]).toEqual([0, '']);
    expect(backedUp.json.files.map((file: { name: string }) => file.name).sort()).toEqual(STORE_FILES);
    expect(BigInt(backedUp.json.event_store_head)).toBeGreaterThanOrEqual(BigInt(manifest.read_up_to));
    expect(JSON.parse(readFileSync(join(backup, 'backup-manifest.json'), 'utf8'))).toEqual({
      format: 'campaign-ops-backup/1',
      files: backedUp.json.files,
      event_store_head: backedUp.json.event_store_head,
      created_at: backedUp.json.created_at,
    });
    expect(readdirSync(backup).sort()).toEqual(['backup-manifest.json', ...STORE_FILES]);

    await service.stop();
    rmSync(dataDir, { recursive: true, force: true });

    const restored = await runOps(['restore', '--from', backup, '--json'], env());
    expect([restored.code, restored.stderr]).toEqual([0, '']);
    expect(restored.json).toMatchObject({ event_store_head: backedUp.json.event_store_head, restored: backedUp.json.files });
    expect(readdirSync(dataDir).sort()).toEqual(STORE_FILES);
    const text = await runOps(['restore', '--from', backup, '--force'], env());
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`(event store head ${backedUp.json.event_store_head})`);
    for (const name of STORE_FILES) expect(text.stdout).toContain(`  ${name}  `);

    const verified = await runOps(['verify', exported, '--json'], env(), 60_000);
    expect([verified.code, verified.json?.ok, verified.json?.lines]).toEqual([0, true, manifest.count]);

    await service.start();
    for (const id of launched) {
      const answer = await partner.get(`/v1/dispatches/${id}`);
      expect([answer.status, answer.body.data?.status]).toEqual([200, 'completed']);
    }
    expect((await partner.get('/v1/account')).status).toBe(200);
  }, 180_000);
});

describe('refusals of export, backup and restore on the command line', () => {
  let dir: string;
  let dataDir: string;
  const env = () => ({ DATA_DIR: dataDir });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'campaign-ops-backup-refusals-'));
    dataDir = join(dir, 'data');
    // An event store with an account's events and no dispatch's.
    await ops(['accounts', 'create', '--name', 'Refusals'], env());
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 1 on an export that selects nothing, naming the filter and writing nothing, unless --allow-empty', async () => {
    const file = join(dir, 'none.jsonl');
    const refused = await runOps(['export', '--out', file, '--category', 'dispatch', '--from', '2026-01-01T00:00:00Z'], env());
    expect([refused.code, refused.stdout]).toEqual([1, '']);
    expect(refused.stderr).toContain('export: no event matches --category dispatch --from 2026-01-01T00:00:00.000Z in the event store');
    expect(refused.stderr).toContain('--allow-empty');
    expect([existsSync(file), existsSync(`${file}.manifest.json`)]).toEqual([false, false]);

    const allowed = await runOps(['export', '--out', file, '--category', 'dispatch', '--allow-empty', '--json'], env());
    expect([allowed.code, allowed.json?.count]).toEqual([0, 0]);
    expect(readFileSync(file, 'utf8')).toBe('');
    expect(JSON.parse(readFileSync(`${file}.manifest.json`, 'utf8'))).toMatchObject({ count: 0, filter: { category: 'dispatch' } });
  });

  it.each([
    ['dsp_01NOSUCHDISPATCH000000000000', 'no events in stream dispatch-dsp_01NOSUCHDISPATCH000000000000'],
    ['key_01NOSUCHKEY00000000000000000', '--stream key_01NOSUCHKEY00000000000000000: a key_ id has no stream of its own'],
  ])('refuses --stream %s with exit 2, saying why', async (stream, message) => {
    const run = await runOps(['export', '--out', join(dir, 'stream.jsonl'), '--stream', stream], env());
    expect([run.code, run.stdout]).toEqual([2, '']);
    expect(run.stderr).toContain(message);
  });

  it('refuses a backup with EVENTSTORE_URL set, into a directory that is not empty, or of a DATA_DIR without an event store', async () => {
    const external = await runOps(['backup', '--out', join(dir, 'b1')], { ...env(), EVENTSTORE_URL: 'esdb://127.0.0.1:2113?tls=false' });
    expect(external.code).toBe(2);
    expect(external.stderr).toContain('EVENTSTORE_URL is set: back these up with their own tools: docs/operations.md');
    expect(existsSync(join(dir, 'b1'))).toBe(false);

    const used = join(dir, 'used');
    await ops(['backup', '--out', used, '--json'], env());
    const again = await runOps(['backup', '--out', used], env());
    expect([again.code, again.stderr]).toEqual([2, expect.stringContaining(`--out ${used} exists and is not an empty directory`)]);

    const nothing = await runOps(['backup', '--out', join(dir, 'b2')], { DATA_DIR: join(dir, 'no-store') });
    expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringContaining('holds no event store (events.sqlite): nothing to back up')]);
  });

  it('refuses a tampered backup (exit 1, naming the file) and a DATA_DIR that holds stores unless --force', async () => {
    const backup = join(dir, 'backup');
    await ops(['backup', '--out', backup, '--json'], env());

    const occupied = await runOps(['restore', '--from', backup], env());
    expect([occupied.code, occupied.stderr]).toEqual([2, expect.stringContaining(`DATA_DIR ${dataDir} holds read-models.sqlite, events.sqlite already`)]);
    expect((await runOps(['restore', '--from', backup, '--force'], env())).code).toBe(0);

    const events = join(backup, 'events.sqlite');
    const bytes = readFileSync(events);
    bytes[100] ^= 0x01;
    writeFileSync(events, bytes);
    const target = join(dir, 'target');
    const tampered = await runOps(['restore', '--from', backup], { DATA_DIR: target });
    expect([tampered.code, tampered.stdout]).toEqual([1, '']);
    expect(tampered.stderr).toMatch(/^events\.sqlite: SHA-256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}\n$/);
    expect(readdirSync(target)).toEqual([]);
  });
});
