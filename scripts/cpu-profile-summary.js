#!/usr/bin/env node
// Summarizes a V8 CPU profile (`node --cpu-prof`, or `BENCH_CPU_PROF=DIR npm run bench`): self time
// by area (an npm package, one of our libs or apps, node's internals, the garbage collector) and by
// function, largest first. Usage: node scripts/cpu-profile-summary.js FILE.cpuprofile [TOP]
const { readFileSync } = require('node:fs');

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/cpu-profile-summary.js FILE.cpuprofile [TOP]');
  process.exit(2);
}
const top = Number(topArg) || 30;
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));

const selfMicros = new Map();
profile.samples.forEach((id, i) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

function areaOf(url, functionName) {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const ours = /dist\/((?:libs|apps)\/[^/]+)/.exec(url);
  if (ours) return ours[1];
  return url.startsWith('node:') ? 'node internals' : url;
}

const byFunction = new Map();
const byArea = new Map();
let total = 0;
for (const [id, micros] of selfMicros) {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  const name = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
  const area = areaOf(url, functionName);
  byArea.set(area, (byArea.get(area) ?? 0) + micros);
  total += micros;
}

const row = ([name, micros]) => `${(micros / 1000).toFixed(0).padStart(8)} ms ${((100 * micros) / total).toFixed(1).padStart(5)} %  ${name}`;
const largest = (map) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(row)
    .join('\n');
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n\nby area (self time)\n${largest(byArea)}\n\nby function (self time)\n${largest(byFunction)}`);
