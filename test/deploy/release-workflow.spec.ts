/**
 * Releasing: the tag workflow (.github/workflows/release.yml) checked offline, the image name the
 * prod overlay deploys, the changelog entry of package.json's version, and the license.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../support/service-process';

type Step = { name?: string; uses?: string; run?: string; with?: Record<string, string | boolean> };
type Job = { needs?: string | string[]; 'timeout-minutes'?: number; permissions?: Record<string, string>; steps: Step[] };

const read = (...path: string[]) => readFileSync(join(ROOT, ...path), 'utf8');
const workflow = parse(read('.github', 'workflows', 'release.yml')) as {
  on: { push: { tags: string[] } };
  permissions: Record<string, string>;
  jobs: Record<string, Job>;
};
const version: string = JSON.parse(read('package.json')).version;
const checkStep = workflow.jobs.test.steps.find((step) => step.run?.includes('CHANGELOG.md'));

/** Runs the workflow's tag check as the runner would, in a directory holding the given files. */
function tagCheck(tag: string, changelog: string): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'release-check-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ version }));
  writeFileSync(join(dir, 'CHANGELOG.md'), changelog);
  const run = spawnSync('bash', ['-e', '-c', checkStep?.run ?? 'exit 99'], {
    cwd: dir,
    env: { PATH: process.env.PATH, GITHUB_REF_NAME: tag },
    encoding: 'utf8',
  });
  return { status: run.status, output: run.stdout + run.stderr };
}

describe('the release workflow', () => {
  it('runs on semantic version tags only', () => {
    expect(workflow.on).toEqual({ push: { tags: ['v[0-9]+.[0-9]+.[0-9]+'] } });
  });

  it('refuses a tag that is not package.json version, or a version without its changelog entry', () => {
    expect(tagCheck(`v${version}`, `# Changelog\n\n## [${version}] - 2026-11-29\n`)).toMatchObject({ status: 0 });
    expect(tagCheck('v9.9.9', `## [${version}]\n`)).toEqual({ status: 1, output: expect.stringContaining(`tag v9.9.9 is not v${version}`) });
    expect(tagCheck(`v${version}`, '## [0.0.1]\n')).toEqual({ status: 1, output: expect.stringContaining(`no entry ## [${version}]`) });
  });

  it('pushes the image only after npm test passed, with the only write permission the push needs', () => {
    const { test, image } = workflow.jobs;
    expect(test.steps.map((step) => step.run?.trim())).toEqual(expect.arrayContaining(['npm ci', 'npm test']));
    expect(image.needs).toBe('test');
    expect(workflow.permissions).toEqual({ contents: 'read' });
    expect(image.permissions).toEqual({ contents: 'read', packages: 'write' });
    const push = image.steps.find((step) => step.uses?.startsWith('docker/build-push-action@'));
    expect(push?.with).toMatchObject({ push: true, context: '.' });
    const meta = image.steps.find((step) => step.uses?.startsWith('docker/metadata-action@'));
    expect(meta?.with?.images).toBe('ghcr.io/${{ github.repository_owner }}/campaign-ops');
    for (const job of Object.values(workflow.jobs)) {
      expect(job['timeout-minutes']).toBeGreaterThan(0);
      for (const step of job.steps) if (step.uses) expect(step.uses).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
    }
  });
});

describe('what a release names', () => {
  it('deploys the published image of package.json version in the prod overlay', () => {
    const prod = parse(read('k8s', 'overlays', 'prod', 'kustomization.yaml')) as { images: { name: string; newName: string; newTag: string }[] };
    expect(prod.images).toEqual([{ name: 'campaign-ops', newName: expect.stringMatching(/^ghcr\.io\/[a-z0-9-]+\/campaign-ops$/), newTag: version }]);
  });

  it('has a changelog entry for package.json version and a semantic version', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(read('CHANGELOG.md')).toMatch(new RegExp(`^## \\[${version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm'));
  });

  it('is licensed under Apache-2.0, in package.json and in LICENSE', () => {
    expect(JSON.parse(read('package.json')).license).toBe('Apache-2.0');
    expect(read('LICENSE')).toMatch(/^\s+Apache License\s+Version 2\.0, January 2004/);
  });
});
