/**
 * The bus's trust boundary: each service's NATS user may call only what its code calls, serve only
 * what it serves, and read only its own inbox. The file nats-server runs with
 * (k8s/datastores/nats-auth.conf) is checked against the code, then enforced by a real nats-server
 * started from it.
 */
import 'reflect-metadata';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect, NatsConnection } from 'nats';
import { ConnectionsModule } from '@campaign-ops/connections';
import { DispatchingModule } from '@campaign-ops/dispatching';
import { BUS_ACCESS, BusService, natsAuthorizationFile } from '@campaign-ops/service-runtime';
import { SUBJECTS } from '@campaign-ops/service-messages';
import { NatsBus } from '@campaign-ops/adapters/bus';
import { NatsServerHandle, startNatsServer, waitFor } from '@campaign-ops/testing/bus';
import { WebhookDeliveryModule } from '@campaign-ops/webhook-delivery';

const ROOT = join(__dirname, '..', '..');
const PATTERN = 'microservices:pattern';
const PATTERN_EXTRAS = 'microservices:pattern_extras';
const HANDLER_TYPE = 'microservices:handler_type';
/** Nest's PatternHandler: 1 = @MessagePattern (request/reply), 2 = @EventPattern (durable consumer). */
const MESSAGE = 1;

/** Each service's module and the library its code lives in. */
const SERVICES: Record<BusService, { module?: object; lib: string }> = {
  'api-gateway': { lib: 'gateway' },
  'dispatch-service': { module: DispatchingModule, lib: 'dispatching' },
  'connection-service': { module: ConnectionsModule, lib: 'connections' },
  'webhook-delivery-service': { module: WebhookDeliveryModule, lib: 'webhook-delivery' },
};

/** The @MessagePattern subjects and @EventPattern durables of a module's controllers. */
function handlersOf(module: object | undefined) {
  const serves: string[] = [];
  const consumes: Array<{ durable: string; subject: string }> = [];
  const controllers: Array<{ prototype: object }> = module ? (Reflect.getMetadata('controllers', module) ?? []) : [];
  for (const controller of controllers) {
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name];
      if (typeof handler !== 'function') continue;
      const patterns: string[] | undefined = Reflect.getMetadata(PATTERN, handler);
      if (!patterns) continue;
      if (Reflect.getMetadata(HANDLER_TYPE, handler) === MESSAGE) serves.push(...patterns);
      else for (const subject of patterns) consumes.push({ durable: Reflect.getMetadata(PATTERN_EXTRAS, handler).durable, subject });
    }
  }
  return { serves, consumes };
}

/**
 * The request subjects a library's code names (`SUBJECTS.x` not under @MessagePattern, nor served to
 * callers in the same process with LocalServices' `serve`), outside its specs.
 */
function requestsIn(lib: string): string[] {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts') && !path.endsWith('.spec.ts') && !path.includes('/testing/'))
        for (const match of readFileSync(path, 'utf8').matchAll(/(@MessagePattern\(|\.serve\()?SUBJECTS\.(\w+)/g)) if (!match[1]) names.add(match[2]);
    }
  };
  walk(join(ROOT, 'libs', lib, 'src'));
  return [...names].map((name) => SUBJECTS[name as keyof typeof SUBJECTS]);
}

const sorted = (values: readonly string[]) => [...values].sort();

describe("the services' NATS permissions, as the code declares them", () => {
  it('k8s/datastores/nats-auth.conf is exactly what `ops bus authorization` renders from the declarations', () => {
    expect(readFileSync(join(ROOT, 'k8s', 'datastores', 'nats-auth.conf'), 'utf8')).toBe(natsAuthorizationFile());
  });

  it.each(Object.keys(SERVICES) as BusService[])('%s serves, consumes and calls exactly what its code does', (service) => {
    const { serves, consumes } = handlersOf(SERVICES[service].module);
    expect(sorted(BUS_ACCESS[service].serves)).toEqual(sorted(serves));
    expect([...BUS_ACCESS[service].consumes].sort((a, b) => a.durable.localeCompare(b.durable))).toEqual(
      consumes.sort((a, b) => a.durable.localeCompare(b.durable)),
    );
    expect(sorted(BUS_ACCESS[service].requests)).toEqual(sorted(requestsIn(SERVICES[service].lib)));
  });

  it('has every instruction that generates NATS passwords start them with a letter (nats-server reads "5e12…" as a number and stops)', () => {
    const generators = [join('docs', 'kubernetes.md'), join('docs', 'docker-compose.md'), 'docker-compose.yml', join('k8s', 'nats.env.example')].flatMap(
      (file) =>
        readFileSync(join(ROOT, file), 'utf8')
          .split('\n')
          .filter((line) => line.includes('nats.env.example') && line.includes('openssl rand')),
    );
    expect(generators.length).toBeGreaterThanOrEqual(4);
    for (const line of generators) expect(line).toContain('echo "$v=p$(openssl rand');
  });

  it('lets only dispatch-service ask for a token, and only connection-service answer for one', () => {
    const asking = (Object.keys(BUS_ACCESS) as BusService[]).filter((service) => BUS_ACCESS[service].requests.includes(SUBJECTS.connectionAccess));
    const answering = (Object.keys(BUS_ACCESS) as BusService[]).filter((service) => BUS_ACCESS[service].serves.includes(SUBJECTS.connectionAccess));
    expect([asking, answering]).toEqual([['dispatch-service'], ['connection-service']]);
  });
});

describe('a nats-server started from the repository configuration', () => {
  let nats: NatsServerHandle;
  const open: NatsConnection[] = [];
  let tokenRequests = 0;
  const encoder = new TextEncoder();

  /** A plain nats.js connection as a service's user, its replies on that user's inbox. */
  const as = async (user: string, options: { password?: string; inboxPrefix?: string } = {}) => {
    const { NATS_USER, NATS_PASSWORD } = nats.credentialsOf(user);
    const connection = await connect({
      servers: nats.url,
      user: NATS_USER,
      pass: options.password ?? NATS_PASSWORD,
      inboxPrefix: options.inboxPrefix ?? `_INBOX.${user}`,
    });
    open.push(connection);
    return connection;
  };
  /** Subscribes, and resolves with the server's refusal (or 'accepted' once the server took it). */
  const subscribeOutcome = async (connection: NatsConnection, subject: string, queue?: string) => {
    const refused = new Promise<string>((resolve) => connection.subscribe(subject, { queue, callback: (error) => error && resolve(error.message) }));
    const accepted = connection.flush().then(() => new Promise<string>((resolve) => setTimeout(() => resolve('accepted'), 300)));
    return Promise.race([refused, accepted]);
  };

  beforeAll(async () => {
    nats = await startNatsServer({ authorization: true });
    // connection-service answers token requests, as in the cluster.
    const connectionService = await as('connection-service');
    connectionService.subscribe(SUBJECTS.connectionAccess, {
      queue: SUBJECTS.connectionAccess,
      callback: (_error, msg) => {
        tokenRequests++;
        msg.respond(encoder.encode('a token'));
      },
    });
    await connectionService.flush();
  });

  afterAll(async () => {
    await Promise.all(open.map((connection) => connection.close().catch(() => undefined)));
    await nats?.stop();
  });

  it('refuses a connection without credentials, and one with a wrong password', async () => {
    await expect(connect({ servers: nats.url, reconnect: false })).rejects.toThrow(/Authorization Violation/);
    await expect(as('api-gateway', { password: 'not-the-password' })).rejects.toThrow(/Authorization Violation/);
  });

  it("answers dispatch-service's request for a token", async () => {
    const dispatchService = await as('dispatch-service');
    const reply = await dispatchService.request(SUBJECTS.connectionAccess, encoder.encode('{}'), { timeout: 2000 });
    expect(reply.string()).toBe('a token');
  });

  it("refuses the gateway's request for a token: the publish never reaches connection-service", async () => {
    const gateway = await as('api-gateway');
    const before = tokenRequests;
    await expect(gateway.request(SUBJECTS.connectionAccess, encoder.encode('{}'), { timeout: 2000 })).rejects.toThrow(
      /Permissions Violation for Publish to "svc.connection.access"/,
    );
    await waitFor(
      () => /Publish Violation - User "api-gateway", Subject "svc.connection.access"/.test(nats.permissionViolations().join('\n')),
      'the server to log the violation',
    );
    expect(tokenRequests).toBe(before);
  });

  it("refuses the gateway another service's inbox, every inbox, and a place in a service's queue group", async () => {
    const gateway = await as('api-gateway');
    expect(await subscribeOutcome(gateway, '_INBOX.dispatch-service.>')).toMatch(/Permissions Violation for Subscription/);
    expect(await subscribeOutcome(await as('api-gateway'), '_INBOX.>')).toMatch(/Permissions Violation for Subscription/);
    expect(await subscribeOutcome(await as('api-gateway'), SUBJECTS.connectionCreate, SUBJECTS.connectionCreate)).toMatch(
      /Permissions Violation for Subscription/,
    );
    // Its own inbox is its own.
    expect(await subscribeOutcome(await as('api-gateway'), '_INBOX.api-gateway.x')).toBe('accepted');
  });

  it('refuses a service the inbox prefix of another: replies to dispatch-service cannot be read as dispatch-service by the gateway', async () => {
    const gateway = await as('api-gateway', { inboxPrefix: '_INBOX.dispatch-service' });
    await expect(gateway.request(SUBJECTS.dispatchGet, encoder.encode('{}'), { timeout: 2000 })).rejects.toThrow(/Permissions Violation for Subscription/);
  });

  it("refuses a service's changes to the streams (a stream's subjects could capture any inbox): only the operators' user makes them", async () => {
    const { NATS_USER: user, NATS_PASSWORD: password } = nats.credentialsOf('api-gateway');
    await expect(NatsBus.connect({ servers: nats.url, name: 'gateway-as-admin', credentials: { user, password }, manageStreams: true })).rejects.toThrow(
      /cannot create JetStream stream/,
    );
    await expect(NatsBus.connect({ servers: nats.url, name: 'gateway', credentials: { user, password }, manageStreams: false })).rejects.toThrow(
      /does not exist: an operator creates it with `ops bus setup`/,
    );
    const { NATS_USER: opsUser, NATS_PASSWORD: opsPassword } = nats.credentialsOf('ops');
    const operators = await NatsBus.connect({ servers: nats.url, name: 'ops', credentials: { user: opsUser, password: opsPassword } });
    await operators.close();
    const gateway = await NatsBus.connect({ servers: nats.url, name: 'gateway', credentials: { user, password }, manageStreams: false });
    await expect(gateway.consume({ durable: 'webhook-fan-out', subject: 'evt.partner.>' }, async () => undefined)).rejects.toThrow(
      /Permissions Violation|timeout/i,
    );
    await gateway.close();
  }, 30_000);
});
