/**
 * A checkpoint ahead of the event store's head: the event store was recreated
 * (here: the standalone's events.sqlite deleted) while the read store kept its checkpoints. The
 * processors refuse to run instead of skipping every new event, the app says so (log line,
 * /readyz, metric), and `npm run ops -- processors reset NAME` lets them run.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scrapeMetrics } from '../support/metrics';
import { ops } from '../support/ops-cli';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

describe('a processor whose checkpoint is ahead of the event store', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let app: ServiceProcess | undefined;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-ahead-'));
    env = { DATA_DIR: dataDir, ADMIN_TOKEN };
  });

  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const launchAndComplete = async () => {
    const keys = await openAccountWithKeys(new PartnerClient(app!.url, ADMIN_TOKEN));
    const partner = new PartnerClient(app!.url, keys.testKey);
    const launch = await partner.post('/v1/campaigns', sandboxCampaign('Ahead'));
    expect(launch.status).toBe(200);
    await eventually(
      async () => (await partner.get(`/v1/dispatches/${launch.body.data.id}`)).body.data?.status === 'completed',
      30_000,
      'the dispatch to complete',
    );
  };

  it('refuses to run, not ready and saying why, until its checkpoint is reset; then runs', async () => {
    app = await ServiceProcess.start('standalone', env);
    await launchAndComplete();
    await app.stop();
    // The event store is recreated empty; the read store keeps its checkpoints.
    for (const file of readdirSync(dataDir).filter((f) => f.startsWith('events.sqlite'))) rmSync(join(dataDir, file));

    await app.start('alive');
    const readiness = await eventually(
      async () => {
        const answer = await fetch(`${app!.url}/readyz`);
        const body = (await answer.json()) as { error: { checks: Record<string, string> } };
        return answer.status === 503 && body.error.checks.processors !== 'ok' && body;
      },
      15_000,
      '/readyz to say a processor refuses',
    );
    expect(readiness.error.checks).toMatchObject({ eventStore: 'ok', readStore: 'ok', bus: 'ok' });
    expect(readiness.error.checks.processors).toMatch(
      /dispatch-views: checkpoint \d+ is ahead of the event store's head \(none: the event store is empty\); reset it: npm run ops -- processors reset dispatch-views/,
    );
    expect(app.logs()).toMatch(/refusing to run: checkpoint \d+ is ahead of the event store's head .*processors reset dispatch-views --to-start/);
    const refusing = [...(await scrapeMetrics(app)).matchAll(/^event_processor_checkpoint_ahead\{processor="([^"]+)"\} 1$/gm)].map((m) => m[1]);
    expect(refusing).toContain('dispatch-views');
    expect(await ops(['processors', 'show', 'dispatch-views'], env)).toMatchObject({ processor: 'dispatch-views', head: null, ahead: true });

    for (const name of refusing) expect(await ops(['processors', 'reset', name, '--to-start'], env)).toMatchObject({ reset: name, to: null, ahead: false });
    await eventually(async () => (await fetch(`${app!.url}/readyz`)).status === 200, 15_000, '/readyz to answer 200 after the reset');
    await launchAndComplete();
    expect(await ops(['processors', 'show', 'dispatch-views'], env)).toMatchObject({ ahead: false, checkpoint: expect.stringMatching(/^\d+$/) });
  }, 120_000);
});
