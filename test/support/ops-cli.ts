import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './service-process';

export interface OpsRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, or undefined when it is not JSON (a usage error prints to stderr). */
  json: any;
}

/**
 * The operators' command line as docs/operations.md runs it (`npm run ops -- <args>`, which is
 * `node dist/apps/ops-cli/src/main.js <args>`), on the stores of env.DATA_DIR (and NATS_URL when set).
 */
export async function runOps(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<OpsRun> {
  const main = join(ROOT, 'dist', 'apps', 'ops-cli', 'src', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first (npm test does)`);
  const child = spawn(process.execPath, [main, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

/** runOps that must succeed: exit 0 and JSON on stdout; otherwise throws with what it printed. */
export async function ops(args: string[], env: Record<string, string>): Promise<any> {
  const run = await runOps(args, env);
  if (run.code !== 0 || run.json === undefined) throw new Error(`ops ${args.join(' ')} exited ${run.code}:\n${run.stdout}${run.stderr}`);
  return run.json;
}
