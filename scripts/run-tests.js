#!/usr/bin/env node
// The whole test suite: unit, contract (embedded and NATS adapters) and end-to-end tests.
// NATS is real: the suite starts Debian's nats-server on free ports, so it must be installed.
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, readFileSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

function findNatsServer() {
  if (process.env.NATS_SERVER_BIN && existsSync(process.env.NATS_SERVER_BIN)) return process.env.NATS_SERVER_BIN;
  for (const dir of (process.env.PATH || '').split(':').concat(['/usr/sbin', '/usr/local/bin', '/usr/bin'])) {
    const candidate = path.join(dir, 'nats-server');
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

if (!findNatsServer()) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && existsSync('/usr/bin/apt-get')) {
    console.log("nats-server is missing: installing Debian's package (apt-get install -y nats-server)");
    execFileSync('apt-get', ['update'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', 'nats-server'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } else {
    console.error("The test suite runs a real nats-server. Install Debian's: sudo apt-get install -y nats-server");
    process.exit(1);
  }
}

mkdirSync(path.join(root, 'tmp'), { recursive: true });
const results = path.join(root, 'tmp', 'jest-results.json');
const run = spawnSync(
  process.execPath,
  [require.resolve('jest/bin/jest'), '--ci', '--maxWorkers=2', '--json', `--outputFile=${results}`, ...process.argv.slice(2)],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NX_NO_CLOUD: 'true', NX_DAEMON: 'false' } },
);

if (existsSync(results)) {
  const summary = JSON.parse(readFileSync(results, 'utf8'));
  const skipped = summary.numPendingTests + summary.numTodoTests;
  console.log(`\n${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${skipped} skipped`);
  if (summary.numTotalTests === 0) {
    console.error('no test ran');
    process.exit(1);
  }
}
process.exit(run.status ?? 1);
