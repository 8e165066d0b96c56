#!/usr/bin/env node
// Writes libs/api-contract/src/time-zones.ts: every zone and link of the IANA time zone database
// (tzdata.zi, from Debian's tzdata package) that this Node's ICU also knows, sorted.
// Run it when tzdata adds names: node scripts/time-zones.js [path to tzdata.zi]
const { readFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const source = process.argv[2] || '/usr/share/zoneinfo/tzdata.zi';
const text = readFileSync(source, 'utf8');
const version = (text.match(/^# version (\S+)/m) || [])[1] || 'unknown';
const names = new Set();
for (const line of text.split('\n')) {
  const [kind, a, b] = line.split(' ');
  if (kind === 'Z') names.add(a);
  if (kind === 'L') names.add(b);
}
const known = (name) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return /^[A-Za-z]/.test(name);
  } catch {
    return false;
  }
};
const list = [...names].filter(known).sort();
let out =
  '/**\n * The time zone names a schedule or a sandbox connection may give: every zone and link of the IANA\n' +
  ` * time zone database (tzdata ${version}, as Debian ships it) that Node's ICU also knows, exactly as\n` +
  ' * written (case included). Read from /usr/share/zoneinfo/tzdata.zi; regenerate with\n * scripts/time-zones.js when tzdata adds names.\n */\n' +
  'export const TIME_ZONES: readonly string[] = [\n';
for (let i = 0; i < list.length; i += 6)
  out += `  ${list
    .slice(i, i + 6)
    .map((name) => `'${name}'`)
    .join(', ')},\n`;
out += '];\n';
writeFileSync(path.join(__dirname, '..', 'libs/api-contract/src/time-zones.ts'), out);
console.log(`${list.length} names (tzdata ${version})`);
