import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetStoreDir, freePort, launch, onFreshPortsIfTaken, registerStoreDir, resolveBinary, RunningServer } from './nats-server';

/**
 * A throwaway JetStream cluster for tests: `size` nats-servers (3 by default) on loopback ports,
 * routed to each other, each with its own store directory, so streams with 3 replicas work and a
 * node can be killed and brought back as in production.
 */
export interface NatsClusterHandle {
  /** Every node's client URL, comma-separated: what NATS_URL takes. */
  url: string;
  nodes: NatsClusterNode[];
  /** Resolves once every running node knows the JetStream meta leader, itself a running node. */
  waitForMetaLeader(timeoutMs?: number): Promise<string>;
  /** SIGTERM every node, wait for the exits, delete the store directories. Final. */
  stop(): Promise<void>;
}

export interface NatsClusterNode {
  /** `server_name`, e.g. `n1`: what the meta leader and stream leaders are named by. */
  name: string;
  url: string;
  port: number;
  clusterPort: number;
  monitorPort: number;
  storeDir: string;
  running(): boolean;
  /** SIGKILL, like a crashed pod; the store directory stays, so `start()` recovers it. */
  kill(): void;
  /** SIGTERM (lame-duck free, as a pod deletion) and wait for the exit; the store stays. */
  stop(): Promise<void>;
  /** Starts the node again (same ports, same store) and resolves once it greets clients. */
  start(): Promise<void>;
  /** stop() if it runs, then start(). */
  restart(): Promise<void>;
}

const HOST = '127.0.0.1';
const CLUSTER_NAME = 'campaign-ops-test';
const META_LEADER_TIMEOUT_MS = 30_000;

interface JszMeta {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

/** Starts the cluster (on fresh ports again when one of its nine was taken meanwhile). */
export function startNatsCluster(size = 3): Promise<NatsClusterHandle> {
  return onFreshPortsIfTaken(() => startNatsClusterOnce(size));
}

async function startNatsClusterOnce(size: number): Promise<NatsClusterHandle> {
  const binary = resolveBinary();
  const specs: { name: string; port: number; clusterPort: number; monitorPort: number; storeDir: string }[] = [];
  for (let i = 1; i <= size; i++) {
    const storeDir = mkdtempSync(join(tmpdir(), `nats-cluster-n${i}-`));
    registerStoreDir(storeDir);
    specs.push({ name: `n${i}`, port: await freePort(), clusterPort: await freePort(), monitorPort: await freePort(), storeDir });
  }
  const routes = specs.map((spec) => `nats://${HOST}:${spec.clusterPort}`).join(',');

  const nodes = specs.map((spec): NatsClusterNode & { server?: RunningServer } => {
    const args = [
      '-a',
      HOST,
      '-p',
      String(spec.port),
      '-m',
      String(spec.monitorPort),
      '-n',
      spec.name,
      '-js',
      '-sd',
      spec.storeDir,
      '--cluster_name',
      CLUSTER_NAME,
      '--cluster',
      `nats://${HOST}:${spec.clusterPort}`,
      '--routes',
      routes,
    ];
    const node: NatsClusterNode & { server?: RunningServer } = {
      ...spec,
      url: `nats://${HOST}:${spec.port}`,
      running: () => !!node.server && node.server.child.exitCode === null && node.server.child.signalCode === null,
      kill() {
        node.server?.child.kill('SIGKILL');
      },
      async stop() {
        await node.server?.terminate();
      },
      async start() {
        if (node.running()) return;
        node.server = await launch(binary, args, spec.port);
      },
      async restart() {
        await node.stop();
        node.server = await launch(binary, args, spec.port);
      },
    };
    return node;
  });

  const handle: NatsClusterHandle = {
    url: nodes.map((node) => node.url).join(','),
    nodes,
    async waitForMetaLeader(timeoutMs = META_LEADER_TIMEOUT_MS) {
      const deadline = Date.now() + timeoutMs;
      let last = 'no answer yet';
      for (;;) {
        const running = nodes.filter((node) => node.running());
        const leaders = await Promise.all(running.map((node) => metaLeaderSeenBy(node.monitorPort)));
        const leader = leaders[0];
        if (leader && leaders.every((seen) => seen === leader) && running.some((node) => node.name === leader)) return leader;
        last = running.map((node, i) => `${node.name} sees ${leaders[i] ?? 'no leader'}`).join(', ');
        if (Date.now() > deadline) throw new Error(`no JetStream meta leader within ${timeoutMs} ms: ${last}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop()));
      for (const node of nodes) {
        rmSync(node.storeDir, { recursive: true, force: true });
        forgetStoreDir(node.storeDir);
      }
    },
  };

  try {
    // Together: a node waits for its routes only in the background, so each greets clients at once.
    await Promise.all(nodes.map((node) => node.start()));
    await handle.waitForMetaLeader();
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}

/** The meta leader a node's monitoring port names (`/jsz`), or undefined (none elected, node not answering). */
async function metaLeaderSeenBy(monitorPort: number): Promise<string | undefined> {
  try {
    const response = await fetch(`http://${HOST}:${monitorPort}/jsz`, { signal: AbortSignal.timeout(1000) });
    if (!response.ok) return undefined;
    const jsz = (await response.json()) as JszMeta;
    return jsz.meta_cluster?.leader || undefined;
  } catch {
    return undefined;
  }
}
