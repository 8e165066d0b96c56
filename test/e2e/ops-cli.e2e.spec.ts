/**
 * The operators' command line (docs/operations.md, "The ops command line"), run as `npm run ops` runs it,
 * on the stores of a standalone process that is running: what it creates works there at once.
 * Parked bus messages are made for real: a consumer that fails every one of its maxDeliver deliveries.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bus, Consumer, DeliveredMessage } from '@campaign-ops/bus';
import { InProcessBus, NatsBus } from '@campaign-ops/adapters/bus';
import { NatsServerHandle, startNatsServer } from '@campaign-ops/testing/bus';
import { ops, runOps } from '../support/ops-cli';
import { eventually, PartnerClient } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

describe('the ops command line', () => {
  let dataDir: string;
  let service: ServiceProcess;
  const env = () => ({ DATA_DIR: dataDir });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-cli-'));
    service = await ServiceProcess.start('standalone', { DATA_DIR: dataDir });
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('opens an account and issues keys that work against the running service at once, grants credits, revokes a key', async () => {
    const account = await ops(['accounts', 'create', '--name', 'Acme', '--credits', '250'], env());
    expect(account).toEqual({
      id: expect.stringMatching(/^acct_/),
      name: 'Acme',
      credits_granted: { live: 250, test: 250 },
      oauth_redirect_uris: [],
      created_at: expect.any(String),
    });

    const key = await ops(['keys', 'create', '--account', account.id, '--mode', 'test'], env());
    expect(key).toEqual({
      id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^mk_test_/),
      mode: 'test',
      account_id: account.id,
      created_at: expect.any(String),
    });
    const partner = new PartnerClient(service.url, key.key);
    // The running service applies the starting credits when it sees the account's event.
    await eventually(async () => (await partner.get('/v1/account')).body.data?.credits_balance === 250, 15_000, 'the starting credits');
    expect((await partner.get('/v1/account')).body.data).toEqual({
      id: account.id,
      name: 'Acme',
      environment: 'sandbox',
      credits_balance: 250,
      oauth_redirect_uris: [],
    });

    // Where its OAuth rounds may send people back, and a new name.
    const updated = await ops(
      [
        'accounts',
        'update',
        account.id,
        '--name',
        'Acme EU',
        '--redirect-uri',
        'https://acme.example/connected',
        '--redirect-uri',
        'http://localhost:3000/back',
      ],
      env(),
    );
    expect(updated).toMatchObject({ id: account.id, name: 'Acme EU', oauth_redirect_uris: ['https://acme.example/connected', 'http://localhost:3000/back'] });
    expect((await partner.get('/v1/account')).body.data).toMatchObject({
      name: 'Acme EU',
      oauth_redirect_uris: ['https://acme.example/connected', 'http://localhost:3000/back'],
    });
    expect(await ops(['accounts', 'update', account.id, '--no-redirect-uris'], env())).toMatchObject({ name: 'Acme EU', oauth_redirect_uris: [] });

    const granted = await ops(['credits', 'grant', '--account', account.id, '--mode', 'test', '--amount', '500'], env());
    expect(granted).toMatchObject({ id: account.id, credits: { live: 250, test: 750 } });
    await eventually(async () => (await partner.get('/v1/account')).body.data?.credits_balance === 750, 15_000, 'the grant in the balance');

    const live = await ops(['keys', 'create', '--account', account.id, '--mode', 'live'], env());
    expect((await new PartnerClient(service.url, live.key).get('/v1/account')).body.data).toMatchObject({ environment: 'live', credits_balance: 250 });

    expect(await ops(['keys', 'revoke', key.id], env())).toEqual({ id: key.id, revoked: true });
    const revoked = await partner.get('/v1/account');
    expect([revoked.status, revoked.body.error?.code]).toEqual([401, 'api_key_revoked']);
    expect((await new PartnerClient(service.url, live.key).get('/v1/account')).status).toBe(200);
  });

  it.each([
    [[], 'accounts create --name NAME'],
    [['accounts', 'delete'], 'unknown command: accounts delete'],
    [['accounts', 'create'], '--name is required'],
    [['keys', 'create', '--account', 'acct_x', '--mode', 'staging'], '--mode must be live or test'],
    [['credits', 'grant', '--account', 'acct_x', '--mode', 'test', '--amount', '2.5'], '--amount must be a whole number'],
    [['accounts', 'create', '--name', 'X', '--bogus'], "Unknown option '--bogus'"],
    [['bus', 'replay'], 'bus replay needs the id of a parked message'],
    [['accounts', 'update'], 'accounts update needs the account id'],
    [['accounts', 'update', 'acct_x'], 'accounts update needs --name, --redirect-uri or --no-redirect-uris'],
    [
      ['accounts', 'create', '--name', 'X', '--redirect-uri', 'https://acme.example/back?x=1'],
      '--redirect-uri https://acme.example/back?x=1: must be an absolute https URL',
    ],
  ])('refuses %j with exit code 2, saying why in a line and where the usage is', async (args, message) => {
    const run = await runOps(args, env());
    expect([run.code, run.stdout]).toEqual([2, '']);
    expect(run.stderr).toContain(message);
    if (args.length > 0) expect(run.stderr).toMatch(/\n\(npm run ops -- --help lists every command\)\n$/);
    else expect(run.stderr).toContain('Output is JSON.');
  });

  it.each([[['--help']], [['help']], [['export', '--help']]])('prints the usage for %j on stdout, exit code 0', async (args) => {
    const run = await runOps(args, env());
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(run.stdout).toContain('Output is JSON.');
    expect(run.stdout).toContain('backup --out DIR');
  });

  it.each([
    [['keys', 'create', '--account', 'acct_01NOSUCHACCOUNT000000000000', '--mode', 'test'], 'No such account'],
    [['keys', 'revoke', 'key_01NOSUCHKEY00000000000000000'], 'No such key'],
  ])('fails %j with exit code 1 and the reason', async (args, message) => {
    const run = await runOps(args, env());
    expect([run.code, run.stdout]).toEqual([1, '']);
    expect(run.stderr).toContain(message);
  });

  /** A consumer that fails every delivery until told to accept: what leaves a message parked. */
  async function failingConsumer(bus: Bus, durable: string) {
    const deliveries: Array<DeliveredMessage<{ n: number }>> = [];
    let accept = false;
    const consumer: Consumer = await bus.consume<{ n: number }>({ durable, subject: 'evt.opstest.>', maxDeliver: 2, ackWaitMs: 5000 }, async (message) => {
      deliveries.push(message);
      if (!accept) throw new Error('the partner system is down');
    });
    return { consumer, deliveries, accept: () => void (accept = true) };
  }

  async function parkListReplay(bus: Bus, opsEnv: Record<string, string>, durable: string): Promise<void> {
    const handler = await failingConsumer(bus, durable);
    try {
      await bus.publish('evt.opstest.thing', { n: 1 }, { msgId: `${durable}-1` });
      await eventually(async () => (await bus.listParked({ durable })).length === 1, 20_000, 'the message to be parked');

      const [parked, ...more] = await ops(['bus', 'parked', '--durable', durable], opsEnv);
      expect(more).toEqual([]);
      expect(parked).toEqual({
        id: expect.any(String),
        durable,
        subject: 'evt.opstest.thing',
        data: { n: 1 },
        headers: expect.any(Object),
        deliveryCount: 2,
        parkedAt: expect.any(String),
        reason: 'the partner system is down',
      });
      expect(handler.deliveries.map((d) => d.deliveryCount)).toEqual([1, 2]);

      handler.accept();
      expect(await ops(['bus', 'replay', parked.id], opsEnv)).toEqual({ replayed: parked.id });
      await eventually(async () => handler.deliveries.length === 3, 15_000, 'the replayed message to be delivered');
      expect(handler.deliveries[2]).toMatchObject({ data: { n: 1 }, deliveryCount: 1 });
      expect(await ops(['bus', 'parked'], opsEnv)).toEqual([]);
    } finally {
      await handler.consumer.stop();
    }
  }

  it("lists a message parked on the standalone's bus and replays it to its consumer", async () => {
    // The standalone's bus file, shared with the running service, as the command line opens it.
    const bus = InProcessBus.open({ file: join(dataDir, 'bus.sqlite') });
    try {
      await parkListReplay(bus, env(), 'ops-cli-e2e');
    } finally {
      await bus.close();
    }
  });

  describe('over NATS (NATS_URL set)', () => {
    let nats: NatsServerHandle;
    let bus: NatsBus;
    beforeAll(async () => {
      nats = await startNatsServer();
      bus = await NatsBus.connect({ servers: nats.url, name: 'ops-cli-e2e' });
    });
    afterAll(async () => {
      await bus?.close();
      await nats?.stop();
    });

    it('lists a message parked in JetStream and replays it to its consumer', async () => {
      await parkListReplay(bus, { ...env(), NATS_URL: nats.url }, 'ops-cli-e2e-nats');
    });
  });
});
