import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerHandle, startNatsServer } from '@campaign-ops/testing/bus';
import { ops } from './ops-cli';

/**
 * nats-server as the deployments run it: the repository's users and permissions
 * (k8s/datastores/nats-auth.conf), and the streams made by the operators' `ops bus setup`, as the
 * nats-streams Job does, since the services' users may not make them. Each app then connects with
 * `nats.credentialsOf(app)`; a call its permissions leave out fails, and shows in
 * `permissionViolations()`.
 */
export async function startNatsAsDeployed(): Promise<NatsServerHandle> {
  const nats = await startNatsServer({ authorization: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-bus-setup-'));
  try {
    await ops(['bus', 'setup'], { NATS_URL: nats.url, DATA_DIR: dataDir, ...nats.credentialsOf('ops') });
    return nats;
  } catch (error) {
    await nats.stop();
    throw error;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
