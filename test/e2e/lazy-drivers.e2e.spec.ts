/**
 * A process on the embedded stores never loads the drivers of the stores it does not use:
 * MongoDB's driver, EventStoreDB's gRPC client and the nats client load on the first use of their
 * adapter (the adapters' entry points export them lazily), so the standalone process is lighter.
 * Run on dist/, in a process of its own, where require.cache shows what was loaded.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../support/service-process';

const DRIVERS = { mongodb: '/node_modules/mongodb/', eventstore: '/node_modules/@eventstore/db-client/', nats: '/node_modules/nats/' };

/** Which drivers a fresh process has loaded after `script` ran in it (with `dist` the build's directory). */
function driversLoadedAfter(script: string): Record<keyof typeof DRIVERS, boolean> {
  const probe = `
    const dist = ${JSON.stringify(join(ROOT, 'dist'))};
    require('reflect-metadata');
    ${script}
    const loaded = Object.keys(require.cache);
    const drivers = ${JSON.stringify(DRIVERS)};
    process.stdout.write(JSON.stringify(Object.fromEntries(Object.entries(drivers).map(([name, path]) => [name, loaded.some((file) => file.includes(path))]))));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', probe], { cwd: ROOT, encoding: 'utf8' }));
}

describe('the drivers of the stores a process does not use', () => {
  it('are not loaded by the standalone app and its adapters', () => {
    expect(driversLoadedAfter(`require(dist + '/apps/standalone/src/app.module.js');`)).toEqual({ mongodb: false, eventstore: false, nats: false });
  });

  it('are loaded on the first use of their adapter', () => {
    const use = (lib: string, name: string) => `require(dist + '/libs/${lib}/src/adapters/index.js').${name};`;
    expect(driversLoadedAfter(use('read-store', 'MongoReadStore'))).toEqual({ mongodb: true, eventstore: false, nats: false });
    expect(driversLoadedAfter(use('event-store', 'EventStoreDbEventStore'))).toEqual({ mongodb: false, eventstore: true, nats: false });
    expect(driversLoadedAfter(use('bus', 'NatsBus'))).toEqual({ mongodb: false, eventstore: false, nats: true });
  });
});
