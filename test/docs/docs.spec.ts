/**
 * The README and docs/ as a reader follows them: every relative link resolves (to a file, and to
 * a heading where it names one), every command shown exists (npm scripts, the ops command line's
 * commands, scripts and paths), every environment variable the code reads is in the tables of
 * docs/configuration.md and none that it does not read, and the text holds no tracker numbers,
 * dated diary or first-person narrative.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { loadNetworkSettings } from '@campaign-ops/ad-networks';
import { AppName, loadConfig } from '@campaign-ops/service-runtime';
import { ROOT } from '../support/service-process';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The text a reader reads as prose: fenced code blocks and inline code left out. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Everything shown as code: fenced blocks and inline code spans. */
function code(markdown: string): string {
  const blocks = markdown.match(/^```[\s\S]*?^```/gm) ?? [];
  const spans = markdown.replace(/^```[\s\S]*?^```/gm, '').match(/`[^`\n]+`/g) ?? [];
  return [...blocks, ...spans].join('\n');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

function links(markdown: string): string[] {
  return [...prose(markdown.replace(/`[^`\n]*`/g, '')).matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target);
}

/** The ops command line's commands, from its usage text: `export`, `bus` with `parked`, `replay`, …. */
function opsCommands(): Map<string, Set<string>> {
  const sources = readdirSync(join(ROOT, 'apps/ops-cli/src'))
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts'))
    .map((name) => read(`apps/ops-cli/src/${name}`));
  const commands = new Map<string, Set<string>>();
  for (const source of sources)
    for (const [, command, sub] of source.matchAll(/^(?:export const \w+ = `)? {2}([a-z][a-z-]*)(?: ([a-z][a-z|-]*)(?=\s|$))?/gm)) {
      const subs = commands.get(command) ?? new Set<string>();
      for (const name of sub?.split('|') ?? []) subs.add(name);
      commands.set(command, subs);
    }
  return commands;
}

/** Variables read by name anywhere in the code, the tests, the scripts and the manifests' scripts. */
function variablesReadByName(): Set<string> {
  const files = execFileSync('git', ['ls-files', 'apps', 'libs', 'scripts', 'test', 'k8s', '*.js', '*.mjs'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((path) => /\.(ts|js|mjs)$/.test(path) && existsSync(join(ROOT, path)));
  const patterns = [
    /process\.env\.([A-Z][A-Z0-9_]+)/g,
    /\benv\.([A-Z][A-Z0-9_]+)/g,
    /\benv\[['"`]([A-Z][A-Z0-9_]+)['"`]\]/g,
    /(?<!credentialsOf\()\b(?:env, |envInt\()'([A-Z][A-Z0-9_]+)'/g,
  ];
  const names = new Set<string>();
  for (const file of files) {
    const source = read(file);
    for (const pattern of patterns) for (const [, name] of source.matchAll(pattern)) names.add(name);
  }
  for (const system of ['PATH', 'HOME']) names.delete(system);
  return names;
}

/** Variables the configuration loaders read, by asking them: every name they look up, per app. */
function variablesReadByLoaders(): Set<string> {
  const names = new Set<string>();
  const dataDir = mkdtempSync(join(tmpdir(), 'docs-config-'));
  const given: Record<string, string> = {
    DATA_DIR: dataDir,
    WEBHOOK_SECRET_KEY: 'a'.repeat(64),
    IDEMPOTENCY_SECRET_KEY: 'b'.repeat(64),
    CONNECTION_ENCRYPTION_KEY: 'c'.repeat(64),
    NATS_URL: 'nats://127.0.0.1:4222',
  };
  const recording = new Proxy(given, {
    get: (target, name) => {
      if (typeof name === 'string') names.add(name);
      return target[name as string];
    },
    has: (target, name) => {
      if (typeof name === 'string') names.add(name);
      return name in target;
    },
  });
  try {
    const apps: AppName[] = ['standalone', 'api-gateway', 'dispatch-service', 'connection-service', 'webhook-delivery-service', 'ops-cli'];
    for (const app of apps) loadConfig(app, recording);
    loadNetworkSettings(recording);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  return names;
}

const CHANNEL_NAME = /^CHANNEL_(GOOGLE_ADS|META_ADS|TIKTOK_ADS|LINKEDIN_ADS|MICROSOFT_ADS|SNAPCHAT_ADS|PINTEREST_ADS|REDDIT_ADS|X_ADS|AMAZON_ADS)_/;

/** The variables named in the first column of docs/configuration.md's tables. */
function documentedVariables(): Set<string> {
  const names = new Set<string>();
  for (const [, cell] of read('docs/configuration.md').matchAll(/^\| ([^|]+) \|/gm))
    for (const [, name] of cell.matchAll(/`([A-Z][A-Z0-9_<>]+)`/g)) names.add(name);
  return names;
}

describe('README.md and docs/', () => {
  it('keep the README short: what it is, how to run it, where to read on', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
    for (const doc of ['api', 'going-live', 'operations', 'kubernetes', 'docker-compose', 'architecture', 'benchmarks', 'configuration'])
      expect(read('README.md')).toContain(`(docs/${doc}.md)`);
  });

  it('shows the first launch exactly as test/e2e/first-launch.sh runs it', () => {
    const block = /<!-- first-launch[^\n]*-->\n```sh\n([\s\S]*?)```\n/.exec(read('README.md'));
    expect(block?.[1]).toBe(read('test/e2e/first-launch.sh').replace(/^#!.*\n/, ''));
  });

  it.each(DOCUMENTS)('%s: every relative link resolves, to its heading where it names one', (document) => {
    const broken: string[] = [];
    for (const target of links(read(document))) {
      if (/^(https?:|mailto:)/.test(target)) continue;
      const [path, anchor] = target.split('#');
      const file = path === '' ? join(ROOT, document) : resolve(dirname(join(ROOT, document)), path);
      if (!existsSync(file)) broken.push(`${target}: no such file`);
      else if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${target}: no such heading`);
    }
    expect(broken).toEqual([]);
  });

  it.each(DOCUMENTS)('%s: every command shown exists', (document) => {
    const shown = code(read(document));
    const scripts = Object.keys(JSON.parse(read('package.json')).scripts);
    const ops = opsCommands();
    const missing: string[] = [];
    for (const [, script] of shown.matchAll(/\bnpm run ([\w:-]+)/g)) if (!scripts.includes(script)) missing.push(`npm run ${script}`);
    for (const [, command, next] of shown.matchAll(/\bnpm run ops -- ([a-z][a-z-]*)(?: ([a-z][a-z|-]*))?/g)) {
      const subs = ops.get(command);
      if (!subs) missing.push(`ops ${command}`);
      else if (subs.size > 0 && !next?.split('|').every((sub) => subs.has(sub))) missing.push(`ops ${command} ${next ?? ''}`);
    }
    for (const [, path] of shown.matchAll(/\bnode ((?:scripts|test)\/[\w./-]+\.js)/g)) if (!existsSync(join(ROOT, path))) missing.push(`node ${path}`);
    for (const [, app, file] of shown.matchAll(/\bdist\/apps\/([\w-]+)\/src\/([\w-]+)\.js/g))
      if (!existsSync(join(ROOT, 'apps', app, 'src', `${file}.ts`))) missing.push(`dist/apps/${app}/src/${file}.js`);
    for (const [, path] of shown.matchAll(/\bnpx jest ((?:test|libs|apps)\/[\w./-]*)/g)) if (!existsSync(join(ROOT, path))) missing.push(`npx jest ${path}`);
    expect(missing).toEqual([]);
  });

  it.each(DOCUMENTS)('%s: no tracker numbers, dated diary or first-person narrative', (document) => {
    const text = prose(read(document));
    expect(text.match(/\bissues? #?\d+/gi) ?? []).toEqual([]);
    expect(text.match(/^#+ .*\b20\d\d-\d\d-\d\d\b.*$/gm) ?? []).toEqual([]);
    expect(text.match(/\b(?:on|as of|since|measured|run of) 20\d\d-\d\d-\d\d\b/gi) ?? []).toEqual([]);
    expect(text.match(/\b(?:this|last|next|previous) session\b/gi) ?? []).toEqual([]);
    expect(text.match(/\b(?:we|We|our|Our|us)\b|\bI\b(?![/'’])/g) ?? []).toEqual([]);
    expect(text).not.toMatch(/\.\.\/shared\b|\bAPI\.md\b|\bSPEC\.md\b|\bDESIGN\.md\b/);
  });
});

describe('docs/configuration.md', () => {
  const documented = documentedVariables();
  const readByName = variablesReadByName();
  const readByLoaders = variablesReadByLoaders();
  const asDocumented = (name: string) => (documented.has(name) ? name : name.replace(CHANNEL_NAME, 'CHANNEL_<CHANNEL>_'));

  it('finds what the loaders read (a check of this test itself)', () => {
    expect([...readByLoaders]).toEqual(
      expect.arrayContaining(['PORT', 'NATS_PASSWORD', 'MONGODB_USER', 'CHANNEL_META_ADS_CLIENT_ID', 'CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN']),
    );
  });

  it('has every environment variable the code reads', () => {
    const read = new Set([...readByName, ...readByLoaders].map(asDocumented));
    expect([...read].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });

  it('has no variable the code does not read', () => {
    const read = new Set([...readByName, ...readByLoaders].map(asDocumented));
    expect([...documented].filter((name) => !read.has(name)).sort()).toEqual([]);
  });
});
