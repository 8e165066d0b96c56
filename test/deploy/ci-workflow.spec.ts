/**
 * The GitHub Actions workflow (.github/workflows/ci.yml) for users who have Docker: checked
 * offline here (no runner, no Docker), and its end-to-end launch script run for real against the
 * standalone process, so the script the compose job relies on is known to work and to fail.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT, ServiceProcess } from '../support/service-process';

type Step = { name?: string; uses?: string; run?: string; if?: string; env?: Record<string, string>; with?: Record<string, unknown> };
type Job = { 'runs-on': string; 'timeout-minutes'?: number; steps: Step[] };

const workflow = parse(readFileSync(join(ROOT, '.github', 'workflows', 'ci.yml'), 'utf8')) as { on: unknown; jobs: Record<string, Job> };
const runs = (job: Job) => job.steps.map((step) => step.run ?? '').join('\n');

function runNode(script: string, env: Record<string, string>, timeoutMs = 90_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the GitHub Actions workflow', () => {
  it('runs the README test command with Node 20, nats-server and a container runtime that must answer', () => {
    const test = workflow.jobs.test;
    expect(test).toBeDefined();
    expect(test.steps.find((step) => step.uses?.startsWith('actions/setup-node@'))?.with).toMatchObject({ 'node-version': 20 });
    expect(runs(test)).toMatch(/apt-get install -y [^\n]*nats-server/);
    expect(runs(test)).toMatch(/docker info/);
    const commands = test.steps.map((step) => step.run?.trim());
    expect(commands).toEqual(expect.arrayContaining(['npm ci', 'npm test']));
    // .ci/run and the README run the same two commands.
    expect(readFileSync(join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^npm ci\nnpm test$/m);
    expect(test.steps.find((step) => step.run?.trim() === 'npm test')?.env).toMatchObject({ REQUIRE_CONTAINERS: 'true' });
  });

  it('brings docker-compose.yml up with fresh secrets, launches through it end to end, and always tears it down', () => {
    const compose = runs(workflow.jobs.compose);
    expect(compose).toMatch(/> \.env/);
    for (const secret of ['WEBHOOK_SECRET_KEY', 'CONNECTION_ENCRYPTION_KEY', 'IDEMPOTENCY_SECRET_KEY', 'ADMIN_TOKEN']) expect(compose).toContain(secret);
    expect(compose).toMatch(/docker compose up -d --build --wait/);
    expect(compose).toMatch(/node scripts\/smoke-launch\.js/);
    const down = workflow.jobs.compose.steps.find((step) => step.run?.includes('docker compose down'));
    expect(down).toMatchObject({ if: 'always()' });
    expect(workflow.jobs.compose.steps.find((step) => step.run?.includes('docker compose logs'))).toMatchObject({ if: 'failure()' });
  });

  it('bounds every job and pins every action to a major version', () => {
    for (const job of Object.values(workflow.jobs)) {
      expect(job['timeout-minutes']).toBeGreaterThan(0);
      for (const step of job.steps) if (step.uses) expect(step.uses).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
    }
  });

  it('fails the run when REQUIRE_CONTAINERS is set and no container runtime answers (there is none here)', async () => {
    const setup = join(ROOT, 'test', 'support', 'global-setup.js');
    const script = join(mkdtempSync(join(tmpdir(), 'ci-require-')), 'probe.js');
    require('node:fs').writeFileSync(
      script,
      `require(${JSON.stringify(setup)})().then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); });`,
    );
    const required = await runNode(script, { REQUIRE_CONTAINERS: 'true', NODE_PATH: join(ROOT, 'node_modules') });
    expect({ code: required.code, stderr: required.stderr }).toEqual({
      code: 3,
      stderr: expect.stringMatching(/^REQUIRE_CONTAINERS=true, but no container runtime/),
    });
    const optional = await runNode(script, { NODE_PATH: join(ROOT, 'node_modules') });
    expect(optional.code).toBe(0);
  });
});

describe("scripts/smoke-launch.js (the compose job's launch)", () => {
  const ADMIN_TOKEN = 'smoke-admin-token-0123456789';
  let dataDir: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-smoke-'));
    service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const smoke = (env: Record<string, string>) => runNode(join(ROOT, 'scripts', 'smoke-launch.js'), { BASE_URL: service.url, SMOKE_TIMEOUT_S: '60', ...env });

  it('launches, sees the dispatch completed, retries a failed one and finds both in the Events API', async () => {
    const { code, stdout, stderr } = await smoke({ ADMIN_TOKEN });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(stdout)).toMatchObject({
      ok: true,
      dispatch: expect.stringMatching(/^dsp_/),
      failed_then_retried: expect.stringMatching(/^dsp_/),
      credits_balance: 8,
    });
  });

  it('fails, naming the step, when the deployment does not do what a partner needs', async () => {
    const { code, stderr } = await smoke({ ADMIN_TOKEN: 'not-the-admin-token-at-all' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^smoke-launch: FAILED at account: POST \/admin\/v1\/accounts answered 401/);
  });
});
