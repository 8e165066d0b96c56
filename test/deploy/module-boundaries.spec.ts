import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

// eslint.config.mjs's depConstraints bite: an upward import fails lint, an allowed one passes.
// ESLint loads its flat config with a native import(), which Jest's module registry refuses, so the
// lint runs in a child node process; Nx's rule reads the project graph `nx show projects` caches.
const repoRoot = join(__dirname, '..', '..');
const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };

type Finding = { ruleId: string | null; message: string };

function lint(cases: { filePath: string; source: string }[]): Finding[][] {
  const script = `
    const { ESLint } = require('eslint');
    const cases = JSON.parse(process.argv[1]);
    (async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const out = [];
      for (const c of cases) out.push((await eslint.lintText(c.source, { filePath: c.filePath }))[0].messages.map(({ ruleId, message }) => ({ ruleId, message })));
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, JSON.stringify(cases)], { cwd: repoRoot, env, encoding: 'utf8' }));
}

const boundaryErrors = (findings: Finding[]) => findings.filter((f) => f.ruleId === '@nx/enforce-module-boundaries');

describe('module boundaries (eslint.config.mjs)', () => {
  let results: Finding[][];

  beforeAll(() => {
    execFileSync(join(repoRoot, 'node_modules', '.bin', 'nx'), ['show', 'projects'], { cwd: repoRoot, env, stdio: 'ignore' });
    results = lint([
      // a domain lib reaching up into a service
      { filePath: 'libs/connection-domain/src/x.ts', source: "import * as delivery from '@campaign-ops/webhook-delivery';\nexport const w = delivery;\n" },
      // an infrastructure lib reaching into a domain
      { filePath: 'libs/bus/src/x.ts', source: "import { CHANNELS } from '@campaign-ops/channels';\nexport const c = CHANNELS;\n" },
      // allowed: a domain lib using the decider (domain) and ids (util)
      {
        filePath: 'libs/dispatch-domain/src/x.ts',
        source:
          "import { newId } from '@campaign-ops/ids';\nimport * as decider from '@campaign-ops/decider';\nexport const id = newId;\nexport const d = decider;\n",
      },
      // a domain lib reaching an adapter through the adapters' entry point
      {
        filePath: 'libs/dispatch-domain/src/y.ts',
        source: "import { SqliteEventStore } from '@campaign-ops/adapters/event-store';\nexport const s = SqliteEventStore;\n",
      },
    ]);
  }, 20_000);

  it('refuses a domain lib importing a service lib', () => {
    expect(boundaryErrors(results[0]).map((f) => f.message)).toEqual([
      expect.stringMatching(/tagged with "type:domain" can only depend on libs tagged with "type:domain", "type:util"/),
    ]);
  });

  it('refuses an infrastructure lib importing a domain lib', () => {
    expect(boundaryErrors(results[1]).map((f) => f.message)).toEqual([
      expect.stringMatching(/tagged with "type:infrastructure" can only depend on libs tagged with "type:infrastructure", "type:util"/),
    ]);
  });

  it('lets a domain lib use domain and util libs', () => {
    expect(results[2]).toEqual([]);
  });

  it("refuses a domain lib importing an infrastructure lib's adapters", () => {
    expect(boundaryErrors(results[3]).map((f) => f.message)).toEqual([
      expect.stringMatching(/tagged with "type:domain" can only depend on libs tagged with "type:domain", "type:util"/),
    ]);
  });
});

describe("the ports' entry points", () => {
  it.each([
    ['bus', ['InProcessBus', 'NatsBus', 'renderNatsAuthorization']],
    ['event-store', ['SqliteEventStore', 'EventStoreDbEventStore']],
    ['read-store', ['SqliteReadStore', 'MongoReadStore', 'StandInWriter']],
  ])('@campaign-ops/%s exports the port without its adapters (%j: @campaign-ops/adapters/ does)', async (lib, adapters) => {
    const port = Object.keys(await import(`@campaign-ops/${lib}`));
    const adapterEntry = Object.keys(await import(`@campaign-ops/adapters/${lib}`));
    expect(port.filter((name) => /^(Sqlite|Mongo|Nats|InProcess|EventStoreDb|StandIn)/.test(name) || adapters.includes(name))).toEqual([]);
    expect(adapterEntry).toEqual(expect.arrayContaining(adapters));
  });
});
