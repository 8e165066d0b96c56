/**
 * The deployment files, checked offline on every run: docker-compose.yml through Debian's
 * docker-compose, every Kubernetes overlay through `kubectl kustomize`, every object it builds
 * against the Kubernetes schemas (kubernetes-models), and the rules production relies on:
 * confined and sized containers, probes, network isolation, placeholders instead of secrets,
 * autoscalers and disruption budgets, data stores whose settings agree with their member count,
 * the wiring of the live ad-network settings (CHANNEL_*, PUBLIC_BASE_URL) to the two services
 * that call the networks, and exposure: the prod Ingress routes the partner paths only, /metrics is
 * on a port of its own that only the monitoring namespace reaches, and k8s/observability's
 * ServiceMonitor scrapes that port on every app.
 *
 * A check whose tool is missing prints one line and is skipped; CI installs both (.ci/run).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_ENDPOINTS, loadNetworkSettings } from '@campaign-ops/ad-networks';
import { CHANNELS } from '@campaign-ops/channels';
import { loadConfig, natsAuthorizationFile, natsUsers } from '@campaign-ops/service-runtime';
import { schemaErrors } from './schemas';

const root = join(__dirname, '..', '..');

// Kubernetes objects as parsed JSON: the schema validation below is what types them.
type Json = any;

const APPS = ['api-gateway', 'dispatch-service', 'connection-service', 'webhook-delivery-service'];
const WORKERS = APPS.filter((app) => app !== 'api-gateway');
const SECRET_NAME = 'campaign-ops-secrets';
// Every Secret a pod reads, and the committed template of its keys.
const SECRET_TEMPLATES: Record<string, string> = {
  [SECRET_NAME]: 'secrets.env.example',
  'campaign-ops-nats': 'nats.env.example',
  'campaign-ops-datastores': 'datastores.env.example',
};
const PRIVATE_IPV4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'];
const PRIVATE_IPV6 = ['fc00::/7', 'fe80::/10'];
const PLACEHOLDER = /^REPLACE_ME/;
// Workers calling providers' APIs reach the internet on 443 only; webhook delivery on any TCP port
// (partners' HTTPS URLs may name one, e.g. https://partner.example:8443/hooks).
const HTTPS_ONLY_WORKERS = ['dispatch-service', 'connection-service'];
const ANY_PORT_WORKERS = ['webhook-delivery-service'];
const INTERNET_CIDRS = ['0.0.0.0/0', '::/0'];
// The ad networks' apps and live-call settings (k8s/channels.env.example): a Secret of their own,
// for the two services that call the networks and no other app.
const CHANNELS_SECRET = 'campaign-ops-channels';
const NETWORK_CALLERS = ['connection-service', 'dispatch-service'];
// Where Prometheus runs (NetworkPolicy metrics-scraping): the only namespace that reaches /metrics.
const MONITORING_NAMESPACE = 'monitoring';
// What the prod Ingress publishes (Prefix or Exact paths of Kubernetes' Ingress), and what it must not.
const PARTNER_PATHS = ['/v1', '/v1/campaigns', '/v1/dispatches/dsp_1/events', '/openapi.json', '/docs', '/docs/swagger-ui.css'];
const NEVER_ROUTED = ['/admin/v1', '/admin/v1/accounts', '/metrics', '/healthz', '/readyz', '/', '/v1admin', '/openapi.json/x', '/documents'];

type Env = Record<string, string | undefined>;

/** The names a loader reads from its environment, recorded as it reads them. */
function variablesRead(load: (env: Env) => unknown, given: Env = {}): string[] {
  const read = new Set<string>();
  const env = new Proxy(given, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return typeof name === 'string' ? target[name] : undefined;
    },
  });
  load(env);
  return [...read];
}

/** A DATA_DIR for the config loader (which creates it; nothing is written there when the keys are given). */
const configDataDir = mkdtempSync(join(tmpdir(), 'deploy-config-'));
afterAll(() => rmSync(configDataDir, { recursive: true, force: true }));

/**
 * Every CHANNEL_* variable the two services read, as the code reads it: the network settings (one
 * set per channel of the CHANNELS catalog) and the service config (CHANNEL_RETRY_MAX_WAIT).
 */
const CHANNEL_VARIABLES: string[] = (() => {
  const given = { DATA_DIR: configDataDir, CONNECTION_ENCRYPTION_KEY: '1'.repeat(64) };
  const names = [
    ...variablesRead(loadNetworkSettings),
    ...NETWORK_CALLERS.flatMap((app) => variablesRead((env) => loadConfig(app as 'connection-service' | 'dispatch-service', env), given)),
  ];
  return [...new Set(names.filter((name) => name.startsWith('CHANNEL_')))].sort();
})();

// ---------------------------------------------------------------------------------------------
// Tools

function findOnPath(name: string): string | null {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/local/bin', '/usr/bin', '/usr/sbin']);
  for (const dir of dirs) {
    const candidate = join(dir, name);
    if (dir && existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

function run(bin: string, args: string[], options: { env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(bin, args, { cwd: root, encoding: 'utf8', env: options.env ?? process.env, maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: (result.stderr ?? '') + (result.error ? String(result.error) : '') };
}

/** kubectl with kustomize v5+ (the manifests use `labels:` and multi-document patches), or why not. */
function findKubectl(): { bin: string } | { missing: string } {
  const bin = findOnPath('kubectl');
  if (!bin) return { missing: "kubectl is not installed (kubectl 1.27+ with kustomize v5; Debian's kubernetes-client is too old)" };
  const version = run(bin, ['version', '--client', '-o', 'json']);
  const kustomize = /"kustomizeVersion":\s*"v?(\d+)/.exec(version.stdout);
  if (!kustomize || Number(kustomize[1]) < 5) return { missing: `${bin} has no kustomize v5 (kubectl 1.27+ needed)` };
  return { bin };
}

function describeWithTool(name: string, tool: { bin: string } | { missing: string }, body: (bin: () => string) => void): void {
  if ('missing' in tool) {
    process.stdout.write(`SKIPPED ${name}: ${tool.missing}\n`);
    describe.skip(name, () => body(() => ''));
  } else {
    describe(name, () => body(() => tool.bin));
  }
}

function parseYaml(text: string, source: string): Json[] {
  return parseAllDocuments(text).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${source}: ${document.errors.map((e) => e.message).join('; ')}`);
    const value = document.toJSON();
    return value === null || value === undefined ? [] : [value];
  });
}

// ---------------------------------------------------------------------------------------------
// docker-compose.yml

const composeTool = (() => {
  const bin = findOnPath('docker-compose');
  return bin ? { bin } : { missing: 'docker-compose is not installed (apt-get install -y docker-compose)' };
})();

// The NATS users of k8s/datastores/nats-auth.conf, and the variable each one's password is in.
const NATS_USERS = natsUsers().map(({ user, passwordVariable }) => ({ user, passwordVariable }));

const COMPOSE_SECRETS: Record<string, string> = {
  WEBHOOK_SECRET_KEY: '0'.repeat(64),
  CONNECTION_ENCRYPTION_KEY: '1'.repeat(64),
  IDEMPOTENCY_SECRET_KEY: '2'.repeat(64),
  ADMIN_TOKEN: 'compose-test-admin-token',
  ...Object.fromEntries(NATS_USERS.map(({ user, passwordVariable }) => [passwordVariable, `nats-password-of-${user}`])),
};

describeWithTool('docker-compose.yml', composeTool, (compose) => {
  let emptyEnvDir: string;
  let emptyEnvFile: string;

  beforeAll(() => {
    // A developer's own .env must not decide the outcome: point compose at an empty one.
    emptyEnvDir = mkdtempSync(join(tmpdir(), 'compose-env-'));
    emptyEnvFile = join(emptyEnvDir, 'empty.env');
    writeFileSync(emptyEnvFile, '');
  });
  afterAll(() => rmSync(emptyEnvDir, { recursive: true, force: true }));

  const withoutSecrets = (): NodeJS.ProcessEnv => {
    const env = { ...process.env };
    for (const name of Object.keys(COMPOSE_SECRETS)) delete env[name];
    return env;
  };
  const composeRun = (args: string[], env: NodeJS.ProcessEnv) => run(compose(), ['--env-file', emptyEnvFile, '-f', 'docker-compose.yml', ...args], { env });

  it('is valid (docker-compose config -q) with the secrets given in the environment', () => {
    const result = composeRun(['config', '-q'], { ...withoutSecrets(), ...COMPOSE_SECRETS });
    // stderr rides along so a failure shows compose's message.
    expect({ status: result.status, stderr: result.stderr.trim() }).toEqual({ status: 0, stderr: expect.any(String) });
  });

  it.each(Object.keys(COMPOSE_SECRETS))('has no default for %s: without it, compose stops and names it', (name) => {
    const env: NodeJS.ProcessEnv = { ...withoutSecrets(), ...COMPOSE_SECRETS };
    delete env[name];
    const result = composeRun(['config', '-q'], env);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(name);
  });

  it('builds each app from the Dockerfile and starts it after healthy dependencies', () => {
    const result = composeRun(['config'], { ...withoutSecrets(), ...COMPOSE_SECRETS });
    expect(result.status).toBe(0);
    const [config] = parseYaml(result.stdout, 'docker-compose config');
    const services = config.services as Record<string, Json>;
    const failures: string[] = [];
    for (const name of ['nats', 'eventstore', 'mongo']) {
      if (!services[name]?.healthcheck?.test) failures.push(`${name}: no healthcheck`);
      if (!services[name]?.volumes?.length) failures.push(`${name}: no volume (data would not survive the container)`);
    }
    for (const app of APPS) {
      const service = services[app];
      if (!service) {
        failures.push(`${app}: missing`);
        continue;
      }
      if (service.build?.args?.APP !== app) failures.push(`${app}: build.args.APP is ${service.build?.args?.APP}`);
      if (!service.healthcheck?.test) failures.push(`${app}: no healthcheck`);
      for (const dependency of ['nats', 'eventstore', 'mongo']) {
        if (service.depends_on?.[dependency]?.condition !== 'service_healthy') failures.push(`${app}: does not wait for ${dependency} to be healthy`);
      }
      for (const variable of ['NATS_URL', 'EVENTSTORE_URL', 'MONGODB_URL', 'PORT', 'METRICS_PORT']) {
        if (!service.environment?.[variable]) failures.push(`${app}: ${variable} not set`);
      }
      const published = (service.ports ?? []).map((port: Json) => (typeof port === 'object' ? Number(port.published) : Number(String(port).split(':')[0])));
      const expected = app === 'api-gateway' ? [3000] : [];
      if (JSON.stringify(published) !== JSON.stringify(expected))
        failures.push(`${app}: publishes ${JSON.stringify(published)}, expected ${JSON.stringify(expected)}`);
    }
    expect(services['api-gateway']?.environment?.ADMIN_TOKEN).toBe(COMPOSE_SECRETS.ADMIN_TOKEN);
    expect(failures).toEqual([]);
  });

  it('runs NATS with the repository users, each app signed in as its own, after the operators made the streams', () => {
    const result = composeRun(['config'], { ...withoutSecrets(), ...COMPOSE_SECRETS });
    const services = parseYaml(result.stdout, 'docker-compose config')[0].services as Record<string, Json>;
    const nats = services.nats;
    expect(nats.command.slice(0, 2)).toEqual(['-c', '/etc/nats/nats-auth.conf']);
    // docker-compose 1.x writes a bind mount as "source:target:mode", compose v2 as an object.
    const mounts = (nats.volumes as Json[]).map((volume) =>
      typeof volume === 'string' ? { source: volume.split(':')[0], target: volume.split(':')[1] } : volume,
    );
    const mounted = mounts.find((volume) => volume.target === '/etc/nats/nats-auth.conf');
    expect(relative(root, mounted?.source ?? '')).toBe(join('k8s', 'datastores', 'nats-auth.conf'));
    const failures: string[] = [];
    for (const { user, passwordVariable } of NATS_USERS) {
      if (nats.environment?.[passwordVariable] !== COMPOSE_SECRETS[passwordVariable]) failures.push(`nats: ${passwordVariable} not passed`);
      const client = user === 'ops' ? services['bus-setup'] : services[user];
      if (client?.environment?.NATS_USER !== user || client?.environment?.NATS_PASSWORD !== COMPOSE_SECRETS[passwordVariable])
        failures.push(`${user}: not signed in as ${user}`);
    }
    for (const app of APPS)
      if (services[app]?.depends_on?.['bus-setup']?.condition !== 'service_completed_successfully')
        failures.push(`${app}: starts before bus-setup made the streams`);
    expect(services['bus-setup']?.command).toEqual(['node', 'dist/apps/ops-cli/src/main.js', 'bus', 'setup']);
    expect(failures).toEqual([]);
  });

  const withoutChannelSettings = (): NodeJS.ProcessEnv => {
    const env = withoutSecrets();
    for (const name of [...CHANNEL_VARIABLES, 'PUBLIC_BASE_URL', 'CONNECTION_ENCRYPTION_KEY_PREVIOUS']) delete env[name];
    return { ...env, ...COMPOSE_SECRETS };
  };
  const composeServices = (env: NodeJS.ProcessEnv): Record<string, Json> => {
    const result = composeRun(['config'], env);
    expect({ status: result.status, stderr: result.stderr.trim() }).toEqual({ status: 0, stderr: expect.any(String) });
    return parseYaml(result.stdout, 'docker-compose config')[0].services;
  };

  it('passes every CHANNEL_* setting from .env or the environment to connection-service and dispatch-service, and to no other app', () => {
    const given = Object.fromEntries(CHANNEL_VARIABLES.map((name) => [name, `given-${name}`]));
    const services = composeServices({ ...withoutChannelSettings(), ...given });
    const failures: string[] = [];
    for (const app of APPS) {
      const environment: Record<string, string> = services[app]?.environment ?? {};
      for (const name of CHANNEL_VARIABLES) {
        const expected = NETWORK_CALLERS.includes(app) ? given[name] : undefined;
        if (environment[name] !== expected) failures.push(`${app}: ${name} is ${JSON.stringify(environment[name])}, expected ${JSON.stringify(expected)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('leaves an unset CHANNEL_* setting empty, which the services read as unset (defaults, no OAuth client)', () => {
    const services = composeServices(withoutChannelSettings());
    for (const app of NETWORK_CALLERS) {
      const environment: Env = { ...services[app].environment, DATA_DIR: configDataDir };
      expect(CHANNEL_VARIABLES.filter((name) => environment[name] !== '')).toEqual([]);
      const settings = loadNetworkSettings(environment);
      for (const channel of CHANNELS) {
        const { clientId, clientSecret, developerToken, apiUrl, oauthUrl, tokenUrl } = settings[channel];
        expect({ channel, clientId, clientSecret, developerToken, apiUrl, oauthUrl, tokenUrl }).toEqual({
          channel,
          clientId: null,
          clientSecret: null,
          developerToken: null,
          ...DEFAULT_ENDPOINTS[channel],
        });
      }
      const config = loadConfig(app as 'connection-service' | 'dispatch-service', environment);
      expect(config.channelRetryMaxWaitMs).toBe(15 * 60_000);
      if (app === 'connection-service') expect(config.connections.previousEncryptionKey).toBeNull();
    }
  });

  it('gives connection-service PUBLIC_BASE_URL: the published gateway by default, else the one given', () => {
    expect(composeServices(withoutChannelSettings())['connection-service'].environment.PUBLIC_BASE_URL).toBe('http://localhost:3000');
    const services = composeServices({ ...withoutChannelSettings(), PUBLIC_BASE_URL: 'https://api.partner.example' });
    expect(services['connection-service'].environment.PUBLIC_BASE_URL).toBe('https://api.partner.example');
    const config = loadConfig('connection-service', { ...services['connection-service'].environment, DATA_DIR: configDataDir });
    expect(config.connections.publicBaseUrl).toBe('https://api.partner.example');
  });
});

// ---------------------------------------------------------------------------------------------
// Kubernetes

const overlaysDir = join(root, 'k8s', 'overlays');
const overlays = existsSync(overlaysDir)
  ? readdirSync(overlaysDir)
      .filter((entry) => existsSync(join(overlaysDir, entry, 'kustomization.yaml')))
      .sort()
  : [];

const secretTemplate = join(root, 'k8s', 'secrets.env.example');

function readSecretTemplate(): Map<string, string> {
  return readEnvFile(secretTemplate);
}

/** NAME=value lines of an env file (as `kubectl create secret --from-env-file` reads them); comments skipped. */
function readEnvFile(file: string): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match) entries.set(match[1], match[2].trim());
  }
  return entries;
}

const id = (object: Json) => `${object.kind}/${object.metadata?.name}`;

/** The pod spec of a workload, or null for other kinds. */
function podSpecOf(object: Json): Json | null {
  switch (object.kind) {
    case 'Deployment':
    case 'StatefulSet':
    case 'DaemonSet':
    case 'ReplicaSet':
    case 'Job':
      return object.spec?.template?.spec ?? null;
    case 'CronJob':
      return object.spec?.jobTemplate?.spec?.template?.spec ?? null;
    default:
      return null;
  }
}

function podLabelsOf(object: Json): Record<string, string> {
  return object.kind === 'CronJob' ? (object.spec?.jobTemplate?.spec?.template?.metadata?.labels ?? {}) : (object.spec?.template?.metadata?.labels ?? {});
}

function containersOf(podSpec: Json): Json[] {
  return [...(podSpec.initContainers ?? []), ...(podSpec.containers ?? [])];
}

/** A label selector (matchLabels and matchExpressions) against a pod's labels. */
function selects(selector: Json, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const expression of selector.matchExpressions ?? []) {
    const present = expression.key in labels;
    const value = labels[expression.key];
    switch (expression.operator) {
      case 'In':
        if (!present || !expression.values.includes(value)) return false;
        break;
      case 'NotIn':
        if (present && expression.values.includes(value)) return false;
        break;
      case 'Exists':
        if (!present) return false;
        break;
      case 'DoesNotExist':
        if (present) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** Whether a NetworkPolicy rule's `ports` let a numeric port through (no ports: all of them; an entry without `port`: all of its protocol). */
function rulePassesPort(rule: Json, protocol: string, port: number): boolean {
  const ports: Json[] = rule.ports ?? [];
  if (ports.length === 0) return true;
  return ports.some((entry) => {
    if ((entry.protocol ?? 'TCP') !== protocol) return false;
    if (entry.port === undefined) return true;
    if (typeof entry.port !== 'number') return false; // a named port: only pods have those, not the internet
    return entry.endPort === undefined ? entry.port === port : port >= entry.port && port <= entry.endPort;
  });
}

/** Whether a NetworkPolicy rule's `ports` let a pod's container port through, by number or by name. */
function rulePassesPodPort(rule: Json, port: { name?: string; containerPort: number; protocol?: string }): boolean {
  const ports: Json[] = rule.ports ?? [];
  if (ports.length === 0) return true;
  return ports.some((entry) => {
    if ((entry.protocol ?? 'TCP') !== (port.protocol ?? 'TCP')) return false;
    if (entry.port === undefined) return true;
    if (typeof entry.port === 'string') return entry.port === port.name;
    return entry.endPort === undefined ? entry.port === port.containerPort : port.containerPort >= entry.port && port.containerPort <= entry.endPort;
  });
}

/** Whether an Ingress path (Kubernetes' Exact or Prefix matching) takes a request path. */
function ingressPathMatches(rule: Json, requestPath: string): boolean {
  const path: string = rule.path ?? '/';
  if (rule.pathType === 'Exact') return requestPath === path;
  if (rule.pathType === 'Prefix') {
    // Element by element, split on '/': /v1 takes /v1 and /v1/x, not /v1x; a trailing slash is ignored.
    const elements = (p: string) => p.split('/').filter(Boolean);
    const prefix = elements(path);
    const request = elements(requestPath);
    return prefix.every((element, i) => request[i] === element);
  }
  throw new Error(`pathType ${rule.pathType} (ImplementationSpecific) depends on the controller: use Exact or Prefix`);
}

/** The paths of an Ingress (every host) that take a request path, as `host path`. */
function ingressRoutes(ingress: Json, requestPath: string): string[] {
  return (ingress.spec.rules ?? []).flatMap((rule: Json) =>
    (rule.http?.paths ?? []).filter((path: Json) => ingressPathMatches(path, requestPath)).map((path: Json) => `${rule.host ?? '*'} ${path.path}`),
  );
}

/** The container port a Service port leads to, in the pods the Service selects (by name or number). */
function containerPortBehind(objects: Json[], service: Json, servicePort: Json): { deployment: Json; port: Json } | null {
  const deployment = objects.find(
    (o) => o.kind === 'Deployment' && o.metadata.namespace === service.metadata.namespace && selects({ matchLabels: service.spec.selector }, podLabelsOf(o)),
  );
  if (!deployment) return null;
  const target = servicePort.targetPort ?? servicePort.port;
  const port = podSpecOf(deployment)
    .containers.flatMap((c: Json) => c.ports ?? [])
    .find((p: Json) => (typeof target === 'string' ? p.name === target : p.containerPort === target));
  return port ? { deployment, port } : null;
}

/** The config map the apps read through `envFrom` (the generator's hash-suffixed name), as name → value. */
function appConfigOf(objects: Json[]): Record<string, string> | null {
  const deployment = objects.find(isApp);
  const ref = deployment ? podSpecOf(deployment).containers[0].envFrom?.find((source: Json) => source.configMapRef)?.configMapRef.name : undefined;
  const configMap = ref && objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === ref);
  return configMap ? (configMap.data ?? {}) : null;
}

/** A container's environment as built: its envFrom ConfigMaps, then its `env` (values and ConfigMap keys), which wins. Secrets are left out. */
function resolvedEnvOf(objects: Json[], container: Json): Env {
  const configMap = (name: string): Record<string, string> => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name)?.data ?? {};
  const env: Env = {};
  for (const source of container.envFrom ?? []) if (source.configMapRef) Object.assign(env, configMap(source.configMapRef.name));
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.configMapKeyRef;
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (ref) env[variable.name] = configMap(ref.name)[ref.key];
  }
  return env;
}

const isApp = (object: Json) => object.kind === 'Deployment' && podLabelsOf(object)['app.kubernetes.io/component'] === 'service';
const appName = (object: Json) => podLabelsOf(object)['app.kubernetes.io/name'];

describeWithTool('Kubernetes manifests (k8s/)', findKubectl(), (kubectl) => {
  const built = new Map<string, { objects: Json[]; error: string | null }>();
  let observability: { objects: Json[]; error: string | null } = { objects: [], error: 'not built' };

  beforeAll(() => {
    for (const overlay of overlays) {
      const result = run(kubectl(), ['kustomize', join('k8s', 'overlays', overlay)]);
      if (result.status !== 0) {
        built.set(overlay, { objects: [], error: result.stderr.trim() || `exit ${result.status}` });
        continue;
      }
      try {
        built.set(overlay, { objects: parseYaml(result.stdout, `kubectl kustomize k8s/overlays/${overlay}`), error: null });
      } catch (error) {
        built.set(overlay, { objects: [], error: (error as Error).message });
      }
    }
    const result = run(kubectl(), ['kustomize', join('k8s', 'observability')]);
    observability =
      result.status === 0
        ? { objects: parseYaml(result.stdout, 'kubectl kustomize k8s/observability'), error: null }
        : { objects: [], error: result.stderr.trim() || `exit ${result.status}` };
  });

  const observabilityObjects = (): Json[] => {
    if (observability.error) throw new Error(`k8s/observability did not build: ${observability.error}`);
    return observability.objects;
  };

  it('builds k8s/observability (ServiceMonitor, PrometheusRule, the dashboard ConfigMap for the Grafana sidecar), valid against the schemas', () => {
    const objects = observabilityObjects();
    expect(objects.map(id).sort()).toEqual(['ConfigMap/campaign-ops-dashboard', 'PrometheusRule/campaign-ops', 'ServiceMonitor/campaign-ops']);
    expect(objects.map((object) => [id(object), schemaErrors(object)]).filter(([, errors]) => errors !== null)).toEqual([]);
    const dashboard = objects.find((o) => o.kind === 'ConfigMap');
    expect(dashboard.metadata.labels?.grafana_dashboard).toBe('1');
    expect(JSON.parse(dashboard.data['campaign-ops-dashboard.json'])).toEqual(
      JSON.parse(readFileSync(join(root, 'k8s', 'observability', 'campaign-ops-dashboard.json'), 'utf8')),
    );
    // Applied into an overlay's namespace (kubectl -n … apply -k): none of its own.
    expect(objects.filter((o) => o.metadata.namespace)).toEqual([]);
  });

  const objectsOf = (overlay: string): Json[] => {
    const entry = built.get(overlay);
    if (!entry || entry.error) throw new Error(`k8s/overlays/${overlay} did not build: ${entry?.error}`);
    return entry.objects;
  };

  it('has a dev and a prod overlay', () => {
    expect(overlays).toEqual(expect.arrayContaining(['dev', 'prod']));
  });

  describe.each(overlays)('overlay %s', (overlay) => {
    it('builds with kubectl kustomize', () => {
      expect(built.get(overlay)?.error ?? null).toBeNull();
      expect(objectsOf(overlay).length).toBeGreaterThan(0);
    });

    it('validates, object by object, against the Kubernetes schemas', () => {
      const failures = objectsOf(overlay)
        .map((object) => [id(object), schemaErrors(object)] as const)
        .filter(([, errors]) => errors !== null)
        .map(([name, errors]) => `${overlay}: ${name}: ${errors}`);
      expect(failures).toEqual([]);
    });

    it('runs the four apps, one Deployment each, from one image selected by APP', () => {
      const apps = objectsOf(overlay).filter(isApp);
      expect(apps.map(appName).sort()).toEqual([...APPS].sort());
      const failures: string[] = [];
      for (const deployment of apps) {
        const container = podSpecOf(deployment).containers[0];
        const env = Object.fromEntries((container.env ?? []).map((e: Json) => [e.name, e.value]));
        const port = container.ports?.find((p: Json) => p.name === 'http')?.containerPort;
        const metricsPort = container.ports?.find((p: Json) => p.name === 'metrics')?.containerPort;
        const annotations = deployment.spec.template.metadata?.annotations ?? {};
        if (env.APP !== appName(deployment)) failures.push(`${overlay}: ${id(deployment)}: APP=${env.APP}`);
        if (String(port) !== env.PORT) failures.push(`${overlay}: ${id(deployment)}: PORT=${env.PORT} but the http port is ${port}`);
        // The app serves /metrics on METRICS_PORT only (its config refuses PORT): the container port named `metrics`.
        if (String(metricsPort) !== env.METRICS_PORT || metricsPort === port)
          failures.push(`${overlay}: ${id(deployment)}: METRICS_PORT=${env.METRICS_PORT} but the metrics port is ${metricsPort} (http ${port})`);
        if (
          annotations['prometheus.io/scrape'] !== 'true' ||
          annotations['prometheus.io/port'] !== String(metricsPort) ||
          annotations['prometheus.io/path'] !== '/metrics'
        ) {
          failures.push(`${overlay}: ${id(deployment)}: Prometheus annotations do not point at /metrics on the metrics port ${metricsPort}`);
        }
      }
      expect(failures).toEqual([]);
    });

    it('confines and sizes every container (limits, non-root, read-only root, no privilege escalation)', () => {
      const failures: string[] = [];
      for (const object of objectsOf(overlay)) {
        const pod = podSpecOf(object);
        if (!pod) continue;
        const podSecurity = pod.securityContext ?? {};
        for (const container of containersOf(pod)) {
          const where = `${overlay}: ${id(object)} container ${container.name}`;
          const security = container.securityContext ?? {};
          const resources = container.resources ?? {};
          for (const kind of ['cpu', 'memory']) {
            if (!resources.limits?.[kind]) failures.push(`${where}: no resources.limits.${kind}`);
            if (!resources.requests?.[kind]) failures.push(`${where}: no resources.requests.${kind}`);
          }
          if ((security.runAsNonRoot ?? podSecurity.runAsNonRoot) !== true) failures.push(`${where}: runAsNonRoot is not true`);
          if ((security.runAsUser ?? podSecurity.runAsUser) === 0) failures.push(`${where}: runs as uid 0`);
          if (security.readOnlyRootFilesystem !== true) failures.push(`${where}: readOnlyRootFilesystem is not true`);
          if (security.allowPrivilegeEscalation !== false) failures.push(`${where}: allowPrivilegeEscalation is not false`);
          if (!(security.capabilities?.drop ?? []).includes('ALL')) failures.push(`${where}: capabilities are not dropped (drop: [ALL])`);
          if ((security.seccompProfile ?? podSecurity.seccompProfile)?.type !== 'RuntimeDefault') failures.push(`${where}: no RuntimeDefault seccomp profile`);
        }
      }
      expect(failures).toEqual([]);
    });

    it('probes every long-running container; the apps answer /healthz (alive) and /readyz (ready)', () => {
      const failures: string[] = [];
      for (const object of objectsOf(overlay)) {
        if (object.kind !== 'Deployment' && object.kind !== 'StatefulSet') continue;
        for (const container of podSpecOf(object).containers) {
          const where = `${overlay}: ${id(object)} container ${container.name}`;
          if (!container.readinessProbe) failures.push(`${where}: no readinessProbe`);
          if (!container.livenessProbe) failures.push(`${where}: no livenessProbe`);
          if (isApp(object)) {
            if (!container.startupProbe) failures.push(`${where}: no startupProbe`);
            if (container.readinessProbe?.httpGet?.path !== '/readyz') failures.push(`${where}: readiness is not GET /readyz`);
            if (container.livenessProbe?.httpGet?.path !== '/healthz') failures.push(`${where}: liveness is not GET /healthz`);
            // /healthz and /readyz are on the API's port; the metrics port answers 404 to them.
            for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
              if (container[probe]?.httpGet?.port !== 'http') failures.push(`${where}: ${probe} is on port ${container[probe]?.httpGet?.port}, not http`);
            }
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it('denies traffic by default; workers take metrics scraping only (and only on the metrics port); internet egress skips private ranges', () => {
      const objects = objectsOf(overlay);
      const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
      const failures: string[] = [];
      const defaultDeny = policies.find(
        (p) =>
          Object.keys(p.spec.podSelector ?? {}).length === 0 &&
          ['Ingress', 'Egress'].every((t) => p.spec.policyTypes?.includes(t)) &&
          !p.spec.ingress &&
          !p.spec.egress,
      );
      if (!defaultDeny) failures.push(`${overlay}: no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rules)`);

      for (const deployment of objects.filter(isApp)) {
        const labels = podLabelsOf(deployment);
        const applying = policies.filter((p) => Object.keys(p.spec.podSelector ?? {}).length > 0 && selects(p.spec.podSelector, labels));
        const internet = applying.some((p) =>
          (p.spec.egress ?? []).some((rule: Json) => (rule.to ?? []).some((peer: Json) => peer.ipBlock?.cidr === '0.0.0.0/0')),
        );
        const name = appName(deployment);
        if (WORKERS.includes(name) && !internet) failures.push(`${overlay}: ${name} cannot reach providers/partners over the internet`);
        if (name === 'api-gateway' && internet) failures.push(`${overlay}: api-gateway may reach the internet`);
        const http = podSpecOf(deployment).containers[0].ports?.find((p: Json) => p.name === 'http');
        for (const policy of applying) {
          for (const rule of policy.spec.ingress ?? []) {
            if (WORKERS.includes(name) && !(rule.from ?? []).length)
              failures.push(`${overlay}: NetworkPolicy/${policy.metadata.name} opens ${name} to any source`);
            if (WORKERS.includes(name) && http && rulePassesPodPort(rule, http))
              failures.push(`${overlay}: NetworkPolicy/${policy.metadata.name} opens ${name}'s http port`);
          }
        }
      }

      for (const policy of policies) {
        for (const rule of policy.spec.egress ?? []) {
          for (const peer of rule.to ?? []) {
            const block = peer.ipBlock;
            if (!block) continue;
            const required = block.cidr === '0.0.0.0/0' ? PRIVATE_IPV4 : block.cidr === '::/0' ? PRIVATE_IPV6 : [];
            const missing = required.filter((range) => !(block.except ?? []).includes(range));
            if (missing.length) failures.push(`${overlay}: NetworkPolicy/${policy.metadata.name} lets ${block.cidr} reach ${missing.join(', ')}`);
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it(`opens every app's metrics port to Prometheus in the namespace ${MONITORING_NAMESPACE} and to nothing else`, () => {
      const objects = objectsOf(overlay);
      const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
      const failures: string[] = [];
      for (const deployment of objects.filter(isApp)) {
        const name = appName(deployment);
        const metrics = podSpecOf(deployment).containers[0].ports?.find((p: Json) => p.name === 'metrics');
        if (!metrics) {
          failures.push(`${overlay}: ${name} has no container port named metrics`);
          continue;
        }
        const rules = policies
          .filter(
            (p) =>
              p.metadata.namespace === deployment.metadata.namespace &&
              selects(p.spec.podSelector, podLabelsOf(deployment)) &&
              (p.spec.policyTypes ?? ['Ingress']).includes('Ingress'),
          )
          .flatMap((p) => (p.spec.ingress ?? []).map((rule: Json) => ({ policy: p.metadata.name, rule })))
          .filter(({ rule }) => rulePassesPodPort(rule, metrics));
        if (rules.length === 0) failures.push(`${overlay}: nothing may scrape ${name}'s metrics port ${metrics.containerPort}`);
        for (const { policy, rule } of rules) {
          const peers: Json[] = rule.from ?? [];
          if (peers.length === 0) failures.push(`${overlay}: NetworkPolicy/${policy} opens ${name}'s metrics port to any source`);
          for (const peer of peers) {
            const namespace = peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'];
            const exactlyMonitoring =
              namespace === MONITORING_NAMESPACE &&
              Object.keys(peer.namespaceSelector.matchLabels).length === 1 &&
              !peer.namespaceSelector.matchExpressions &&
              !peer.ipBlock;
            if (!exactlyMonitoring) failures.push(`${overlay}: NetworkPolicy/${policy} opens ${name}'s metrics port to ${JSON.stringify(peer)}`);
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it("gives each app's Service its http port and its metrics port, each leading to the container port of that name", () => {
      const objects = objectsOf(overlay);
      const failures: string[] = [];
      for (const deployment of objects.filter(isApp)) {
        const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === appName(deployment));
        for (const portName of ['http', 'metrics']) {
          const servicePort = service?.spec.ports?.find((p: Json) => p.name === portName);
          const behind = servicePort && containerPortBehind(objects, service, servicePort);
          if (behind?.port.name !== portName || behind.deployment !== deployment)
            failures.push(`${overlay}: Service/${appName(deployment)} port ${portName} leads to ${JSON.stringify(behind?.port)}`);
        }
      }
      expect(failures).toEqual([]);
    });

    it('routes no Ingress to /metrics, /admin or the probes, and every Ingress only to the http port of a Service', () => {
      const objects = objectsOf(overlay);
      const failures: string[] = [];
      for (const ingress of objects.filter((o) => o.kind === 'Ingress')) {
        if (ingress.spec.defaultBackend) failures.push(`${overlay}: ${id(ingress)} has a defaultBackend (it would take every path)`);
        for (const path of NEVER_ROUTED) {
          try {
            const routes = ingressRoutes(ingress, path);
            if (routes.length) failures.push(`${overlay}: ${id(ingress)} routes ${path} (${routes.join(', ')})`);
          } catch (error) {
            failures.push(`${overlay}: ${id(ingress)}: ${(error as Error).message}`);
          }
        }
        for (const rule of ingress.spec.rules ?? []) {
          for (const path of rule.http?.paths ?? []) {
            const backend = path.backend?.service;
            const service = objects.find(
              (o) => o.kind === 'Service' && o.metadata.name === backend?.name && o.metadata.namespace === ingress.metadata.namespace,
            );
            const servicePort = service?.spec.ports?.find((p: Json) =>
              backend.port?.name !== undefined ? p.name === backend.port.name : p.port === backend.port?.number,
            );
            const behind = servicePort && containerPortBehind(objects, service, servicePort);
            if (behind?.port.name !== 'http')
              failures.push(
                `${overlay}: ${id(ingress)} ${rule.host} ${path.path} leads to ${JSON.stringify(backend)} → container port ${JSON.stringify(behind?.port)}, not http`,
              );
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it("is scraped by k8s/observability's ServiceMonitor: it selects the four apps' Services, on the port behind which each serves METRICS_PORT", () => {
      const objects = objectsOf(overlay);
      const monitors = observabilityObjects().filter((o) => o.kind === 'ServiceMonitor');
      expect(monitors.length).toBe(1);
      const [monitor] = monitors;
      const services = objects.filter((o) => o.kind === 'Service' && selects(monitor.spec.selector, o.metadata.labels ?? {}));
      expect(services.map((s) => s.metadata.name).sort()).toEqual([...APPS].sort());
      const failures: string[] = [];
      for (const service of services) {
        for (const endpoint of monitor.spec.endpoints) {
          const servicePort = service.spec.ports?.find((p: Json) => p.name === endpoint.port);
          const behind = servicePort && containerPortBehind(objects, service, servicePort);
          const container = behind && podSpecOf(behind.deployment).containers[0];
          const metricsPort = container && resolvedEnvOf(objects, container).METRICS_PORT;
          if (!behind || String(behind.port.containerPort) !== metricsPort)
            failures.push(
              `${overlay}: Service/${service.metadata.name} port ${endpoint.port} leads to ${JSON.stringify(behind?.port)}, METRICS_PORT is ${metricsPort}`,
            );
        }
        if (service.metadata.labels?.[monitor.spec.jobLabel] !== service.metadata.name)
          failures.push(
            `${overlay}: Service/${service.metadata.name} has ${monitor.spec.jobLabel}=${service.metadata.labels?.[monitor.spec.jobLabel]}: the job label would not be the app's name`,
          );
      }
      expect(failures).toEqual([]);
    });

    it('lets webhook delivery reach public addresses on any TCP port, dispatch and connection on 443 only', () => {
      const objects = objectsOf(overlay);
      const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
      const failures: string[] = [];
      for (const deployment of objects.filter(isApp)) {
        const name = appName(deployment);
        if (!HTTPS_ONLY_WORKERS.includes(name) && !ANY_PORT_WORKERS.includes(name)) continue;
        const labels = podLabelsOf(deployment);
        const rules: Json[] = policies
          .filter((p) => Object.keys(p.spec.podSelector ?? {}).length > 0 && selects(p.spec.podSelector, labels))
          .flatMap((p) => p.spec.egress ?? []);
        for (const cidr of INTERNET_CIDRS) {
          const toInternet = rules.filter((rule) => (rule.to ?? []).some((peer: Json) => peer.ipBlock?.cidr === cidr));
          const reaches = (port: number) => toInternet.some((rule) => rulePassesPort(rule, 'TCP', port));
          const expected: Array<[number, boolean]> = ANY_PORT_WORKERS.includes(name)
            ? [
                [443, true],
                [8443, true],
                [1, true],
                [65535, true],
              ]
            : [
                [443, true],
                [8443, false],
                [80, false],
              ];
          for (const [port, allowed] of expected) {
            if (reaches(port) !== allowed) failures.push(`${overlay}: ${name} ${allowed ? 'cannot' : 'may'} reach ${cidr} on TCP ${port}`);
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it("replicates the JetStream streams on every NATS server (NATS_STREAM_REPLICAS equals the NATS StatefulSet's replicas)", () => {
      const objects = objectsOf(overlay);
      const config = appConfigOf(objects);
      const nats = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'nats');
      expect(config).not.toBeNull();
      const members = nats?.spec.replicas ?? 1;
      // The apps' default when unset is 1.
      const replicas = Number(config!.NATS_STREAM_REPLICAS ?? '1');
      expect({ members, NATS_STREAM_REPLICAS: replicas }).toEqual({ members, NATS_STREAM_REPLICAS: members });
    });

    it('signs each app in to NATS as its own user, the nats-streams Job as the operators, and gives nats-server the users and their passwords', () => {
      const objects = objectsOf(overlay);
      const failures: string[] = [];
      const clients = [
        ...objects.filter(isApp).map((o) => [appName(o), o] as const),
        ['ops', objects.find((o) => o.kind === 'Job' && o.metadata.name === 'nats-streams')] as const,
      ];
      for (const [user, object] of clients) {
        const { passwordVariable } = NATS_USERS.find((candidate) => candidate.user === user) ?? { passwordVariable: '(no such NATS user)' };
        const env = podSpecOf(object)?.containers[0].env ?? [];
        const userValue = env.find((e: Json) => e.name === 'NATS_USER')?.value;
        const password = env.find((e: Json) => e.name === 'NATS_PASSWORD')?.valueFrom?.secretKeyRef;
        if (userValue !== user || password?.name !== 'campaign-ops-nats' || password?.key !== passwordVariable)
          failures.push(
            `${overlay}: ${id(object)}: NATS_USER=${userValue}, NATS_PASSWORD from ${password?.name}/${password?.key}; expected ${user} and campaign-ops-nats/${passwordVariable}`,
          );
      }
      const nats = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'nats');
      if (!(podSpecOf(nats).containers[0].envFrom ?? []).some((source: Json) => source.secretRef?.name === 'campaign-ops-nats'))
        failures.push(`${overlay}: nats-server does not read campaign-ops-nats`);
      const configName = podSpecOf(nats).volumes.find((v: Json) => v.configMap)?.configMap.name;
      const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === configName)?.data ?? {};
      if (config['nats-auth.conf'] !== natsAuthorizationFile()) failures.push(`${overlay}: nats-auth.conf in ${configName} is not the rendered authorization`);
      if (!/^include \.\/nats-auth\.conf$/m.test(config['nats.conf'] ?? '')) failures.push(`${overlay}: nats.conf does not include ./nats-auth.conf`);
      expect(failures).toEqual([]);
      expect([...readEnvFile(join(root, 'k8s', 'nats.env.example')).keys()].sort()).toEqual(NATS_USERS.map((u) => u.passwordVariable).sort());
    });

    it('holds no secret: Secrets carry placeholders only, and every key the pods need is in its k8s/*.env.example', () => {
      const failures: string[] = [];
      for (const object of objectsOf(overlay)) {
        if (object.kind === 'Secret') {
          const values: Array<[string, string]> = [
            ...Object.entries<string>(object.stringData ?? {}),
            ...Object.entries<string>(object.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')] as [string, string]),
          ];
          for (const [key, value] of values) {
            if (value !== '' && !PLACEHOLDER.test(value))
              failures.push(`${overlay}: ${id(object)} key ${key} holds a value that is not a REPLACE_ME placeholder`);
          }
        }
        const pod = podSpecOf(object);
        if (!pod) continue;
        for (const container of containersOf(pod)) {
          for (const variable of container.env ?? []) {
            const ref = variable.valueFrom?.secretKeyRef;
            if (!ref) continue;
            const template = SECRET_TEMPLATES[ref.name];
            if (!template) failures.push(`${overlay}: ${id(object)} reads Secret ${ref.name}, not one of ${Object.keys(SECRET_TEMPLATES).join(', ')}`);
            else if (!readEnvFile(join(root, 'k8s', template)).has(ref.key))
              failures.push(`${overlay}: ${id(object)} reads ${ref.key}, which k8s/${template} does not list`);
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it('reads every secret that k8s/secrets.env.example leaves empty (optional) with optional: true', () => {
      const optional = [...readSecretTemplate()].filter(([, value]) => value === '').map(([key]) => key);
      expect(optional).toContain('CONNECTION_ENCRYPTION_KEY_PREVIOUS');
      const failures: string[] = [];
      const readers: string[] = [];
      for (const object of objectsOf(overlay)) {
        const pod = podSpecOf(object);
        for (const container of pod ? containersOf(pod) : []) {
          for (const variable of container.env ?? []) {
            const ref = variable.valueFrom?.secretKeyRef;
            if (!ref || !optional.includes(ref.key)) continue;
            readers.push(`${id(object)} ${ref.key}`);
            if (ref.optional !== true)
              failures.push(`${overlay}: ${id(object)} reads ${ref.key} without optional: true (a Secret without the key would keep the pod from starting)`);
          }
        }
      }
      expect(readers).toContain('Deployment/connection-service CONNECTION_ENCRYPTION_KEY_PREVIOUS');
      expect(failures).toEqual([]);
    });

    it(`gives the Secret ${CHANNELS_SECRET} (envFrom, optional) to connection-service and dispatch-service and to no other pod; the build holds no such Secret`, () => {
      const objects = objectsOf(overlay);
      const readers: string[] = [];
      const failures: string[] = [];
      for (const object of objects) {
        if (object.kind === 'Secret' && object.metadata.name.startsWith(CHANNELS_SECRET))
          failures.push(`${overlay}: ${id(object)} is built (kubectl apply -k would overwrite the real one)`);
        const pod = podSpecOf(object);
        for (const container of pod ? containersOf(pod) : []) {
          for (const source of container.envFrom ?? []) {
            if (source.secretRef?.name !== CHANNELS_SECRET) continue;
            readers.push(isApp(object) ? appName(object) : id(object));
            if (source.secretRef.optional !== true)
              failures.push(`${overlay}: ${id(object)} needs ${CHANNELS_SECRET} (not optional: pods wait until it exists)`);
            if (source.prefix) failures.push(`${overlay}: ${id(object)} prefixes ${CHANNELS_SECRET}'s names with ${source.prefix}`);
          }
          for (const variable of container.env ?? []) {
            if (variable.valueFrom?.secretKeyRef?.name === CHANNELS_SECRET) readers.push(`${id(object)} (${variable.name})`);
          }
        }
        for (const volume of pod?.volumes ?? []) {
          if (volume.secret?.secretName === CHANNELS_SECRET) readers.push(`${id(object)} (volume ${volume.name})`);
        }
      }
      expect(readers.sort()).toEqual([...NETWORK_CALLERS].sort());
      expect(failures).toEqual([]);
    });

    it('sets PUBLIC_BASE_URL for connection-service to a URL its config accepts (its default, http://localhost:<PORT>, is wrong in any deployment)', () => {
      const objects = objectsOf(overlay);
      const deployment = objects.find((o) => isApp(o) && appName(o) === 'connection-service');
      const env = resolvedEnvOf(objects, podSpecOf(deployment).containers[0]);
      expect(env.PUBLIC_BASE_URL).toEqual(expect.stringMatching(/^https?:\/\//));
      const config = loadConfig('connection-service', {
        ...env,
        DATA_DIR: configDataDir,
        CONNECTION_ENCRYPTION_KEY: '1'.repeat(64),
        NATS_PASSWORD: 'from-the-secret',
        NATS_TLS_CA_FILE: undefined,
      });
      expect(config.connections.publicBaseUrl).toBe(env.PUBLIC_BASE_URL!.replace(/\/+$/, ''));
    });

    it('configures each data store for its member count (NATS routes, EventStoreDB cluster size, MongoDB members)', () => {
      const objects = objectsOf(overlay);
      const statefulSet = (name: string) => objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === name);
      const failures: string[] = [];

      const nats = statefulSet('nats');
      const natsConfigName = nats?.spec.template.spec.volumes?.find((v: Json) => v.configMap)?.configMap.name;
      const natsConfig: string = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === natsConfigName)?.data?.['nats.conf'] ?? '';
      if (!nats || !natsConfig) failures.push(`${overlay}: no NATS StatefulSet with its nats.conf`);
      else {
        const members = nats.spec.replicas ?? 1;
        const routes = natsConfig.match(/nats:\/\/[a-z0-9.-]+:6222/g) ?? [];
        const expected = members > 1 ? Array.from({ length: members }, (_, i) => `nats://nats-${i}.${nats.spec.serviceName}:6222`) : [];
        if (JSON.stringify(routes) !== JSON.stringify(expected))
          failures.push(`${overlay}: nats.conf routes ${JSON.stringify(routes)} for ${members} member(s), expected ${JSON.stringify(expected)}`);
        if (members === 1 && /^\s*cluster\s*\{/m.test(natsConfig))
          failures.push(`${overlay}: single NATS server with a cluster block (JetStream would wait for absent peers)`);
      }

      const eventstore = statefulSet('eventstore');
      const clusterSize = eventstore?.spec.template.spec.containers[0].env?.find((e: Json) => e.name === 'EVENTSTORE_CLUSTER_SIZE')?.value;
      if (!eventstore || String(eventstore.spec.replicas ?? 1) !== clusterSize) {
        failures.push(`${overlay}: EventStoreDB runs ${eventstore?.spec.replicas} node(s) with EVENTSTORE_CLUSTER_SIZE=${clusterSize}`);
      }

      const mongo = statefulSet('mongo');
      const init = objects.find((o) => o.kind === 'Job' && o.metadata.name === 'mongo-init-replica-set');
      const members = init?.spec.template.spec.containers[0].env?.find((e: Json) => e.name === 'MEMBERS')?.value;
      if (!mongo || !init || String(mongo.spec.replicas ?? 1) !== members)
        failures.push(`${overlay}: MongoDB runs ${mongo?.spec.replicas} member(s), the init Job initiates ${members}`);

      for (const store of [nats, eventstore, mongo].filter(Boolean)) {
        const headless = objects.find((o) => o.kind === 'Service' && o.metadata.name === store.spec.serviceName);
        if (headless?.spec.clusterIP !== 'None') failures.push(`${overlay}: ${id(store)} has no headless Service ${store.spec.serviceName}`);
        if (!store.spec.volumeClaimTemplates?.length) failures.push(`${overlay}: ${id(store)} has no volumeClaimTemplates`);
      }
      expect(failures).toEqual([]);
    });
  });

  describe('prod', () => {
    const prod = () => objectsOf('prod');
    const mountedPaths = (object: Json) => (podSpecOf(object).containers[0].volumeMounts ?? []).map((m: Json) => m.mountPath as string);

    it('speaks TLS to NATS, MongoDB and EventStoreDB, checking each against a CA file every client mounts', () => {
      const objects = prod();
      const failures: string[] = [];
      for (const object of [...objects.filter(isApp), objects.find((o) => o.kind === 'Job' && o.metadata.name === 'nats-streams')]) {
        const env = resolvedEnvOf(objects, podSpecOf(object).containers[0]);
        if (!env.NATS_URL?.startsWith('tls://')) failures.push(`${id(object)}: NATS_URL=${env.NATS_URL}`);
        for (const [name, value] of [
          ['MONGODB_URL', env.MONGODB_URL],
          ['EVENTSTORE_URL', env.EVENTSTORE_URL],
        ] as const)
          if (!/[?&]tls=true(&|$)/.test(value ?? '') || !value?.includes(`tlsCAFile=${env.NATS_TLS_CA_FILE}`)) failures.push(`${id(object)}: ${name}=${value}`);
        if (!env.NATS_TLS_CA_FILE || !mountedPaths(object).some((path: string) => env.NATS_TLS_CA_FILE!.startsWith(`${path}/`)))
          failures.push(`${id(object)}: NATS_TLS_CA_FILE=${env.NATS_TLS_CA_FILE} is not in a mounted volume`);
      }
      const nats = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'nats');
      const configName = podSpecOf(nats).volumes.find((v: Json) => v.configMap)?.configMap.name;
      const tlsConf: string = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === configName)?.data?.['nats-tls.conf'] ?? '';
      const certFiles = [...tlsConf.matchAll(/(?:cert|key)_file:\s*(\S+)/g)].map((m) => m[1]);
      if (certFiles.length !== 2 || !certFiles.every((file) => mountedPaths(nats).some((path: string) => file.startsWith(`${path}/`))))
        failures.push(`nats: nats-tls.conf names ${certFiles.join(', ') || 'no certificate'}, not in a mounted volume`);
      const mongo = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'mongo');
      for (const flag of ['--auth', '--tlsMode=requireTLS', '--clusterAuthMode=x509'])
        if (!podSpecOf(mongo).containers[0].command.includes(flag)) failures.push(`mongo: no ${flag}`);
      const eventstore = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'eventstore');
      if (resolvedEnvOf(objects, podSpecOf(eventstore).containers[0]).EVENTSTORE_INSECURE !== 'false')
        failures.push('eventstore: EVENTSTORE_INSECURE is not false');
      expect(failures).toEqual([]);
    });

    it('signs each app in to MongoDB and EventStoreDB as its own user, whose Jobs make them from the same Secret', () => {
      const objects = prod();
      const failures: string[] = [];
      for (const deployment of objects.filter(isApp)) {
        const env = podSpecOf(deployment).containers[0].env ?? [];
        for (const store of ['MONGODB', 'EVENTSTORE']) {
          const ref = env.find((e: Json) => e.name === `${store}_PASSWORD`)?.valueFrom?.secretKeyRef;
          const expected = `${store}_PASSWORD_${appName(deployment).toUpperCase().replace(/-/g, '_')}`;
          if (ref?.name !== 'campaign-ops-datastores' || ref?.key !== expected)
            failures.push(`${id(deployment)}: ${store}_PASSWORD from ${ref?.name}/${ref?.key}, expected campaign-ops-datastores/${expected}`);
        }
      }
      for (const job of ['mongo-init-replica-set', 'eventstore-users']) {
        const object = objects.find((o) => o.kind === 'Job' && o.metadata.name === job);
        if (!(podSpecOf(object)?.containers[0].envFrom ?? []).some((source: Json) => source.secretRef?.name === 'campaign-ops-datastores'))
          failures.push(`${job}: does not read campaign-ops-datastores`);
      }
      expect(failures).toEqual([]);
    });
    const budgetsFor = (objects: Json[], workload: Json) =>
      objects.filter(
        (o) => o.kind === 'PodDisruptionBudget' && o.metadata.namespace === workload.metadata.namespace && selects(o.spec.selector, podLabelsOf(workload)),
      );

    it('autoscales every app (at least 2 replicas, the gateway 3) and gives each a disruption budget', () => {
      const objects = prod();
      const failures: string[] = [];
      for (const deployment of objects.filter(isApp)) {
        const name = appName(deployment);
        const hpa = objects.find(
          (o) =>
            o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef?.kind === 'Deployment' && o.spec.scaleTargetRef?.name === deployment.metadata.name,
        );
        const minimum = name === 'api-gateway' ? 3 : 2;
        if (!hpa) failures.push(`${id(deployment)}: no HorizontalPodAutoscaler`);
        else if ((hpa.spec.minReplicas ?? 1) < minimum) failures.push(`${id(deployment)}: autoscaler minReplicas ${hpa.spec.minReplicas} < ${minimum}`);
        // A replica count in the Deployment would reset the autoscaler's on every apply.
        if (hpa && deployment.spec.replicas !== undefined) failures.push(`${id(deployment)}: sets replicas although an autoscaler owns the count`);
        if (budgetsFor(objects, deployment).length === 0) failures.push(`${id(deployment)}: no PodDisruptionBudget selects its pods`);
      }
      expect(failures).toEqual([]);
    });

    it('runs NATS, EventStoreDB and MongoDB as 3-member StatefulSets with disruption budgets, one member per node', () => {
      const objects = prod();
      const failures: string[] = [];
      for (const name of ['nats', 'eventstore', 'mongo']) {
        const store = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === name);
        if (!store) {
          failures.push(`StatefulSet/${name}: missing`);
          continue;
        }
        if (store.spec.replicas !== 3) failures.push(`${id(store)}: ${store.spec.replicas} replicas, expected 3`);
        if (budgetsFor(objects, store).length === 0) failures.push(`${id(store)}: no PodDisruptionBudget`);
        const perNode = (store.spec.template.spec.topologySpreadConstraints ?? []).some(
          (c: Json) => c.topologyKey === 'kubernetes.io/hostname' && c.whenUnsatisfiable === 'DoNotSchedule' && c.maxSkew === 1,
        );
        if (!perNode) failures.push(`${id(store)}: members may share a node (no hostname spread with DoNotSchedule)`);
      }
      expect(failures).toEqual([]);
    });

    it("sets NATS_STREAM_REPLICAS=3 in the apps' config, equal to the NATS StatefulSet's replicas", () => {
      const objects = prod();
      const nats = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'nats');
      expect(appConfigOf(objects)?.NATS_STREAM_REPLICAS).toBe('3');
      expect(nats?.spec.replicas).toBe(3);
    });

    it('publishes the gateway through one Ingress: TLS from a cert-manager ClusterIssuer, its class and the host of PUBLIC_BASE_URL, the partner paths only', () => {
      const objects = prod();
      const ingresses = objects.filter((o) => o.kind === 'Ingress');
      expect(ingresses.map(id)).toEqual(['Ingress/api-gateway']);
      const [ingress] = ingresses;
      expect(ingress.apiVersion).toBe('networking.k8s.io/v1');
      expect(ingress.spec.ingressClassName).toEqual(expect.stringMatching(/^[a-z0-9][a-z0-9.-]*$/));
      expect(ingress.metadata.annotations?.['cert-manager.io/cluster-issuer']).toEqual(expect.stringMatching(/^[a-z0-9][a-z0-9.-]*$/));
      const connection = objects.find((o) => isApp(o) && appName(o) === 'connection-service');
      const publicHost = new URL(resolvedEnvOf(objects, podSpecOf(connection).containers[0]).PUBLIC_BASE_URL ?? 'unset:').hostname;
      const hosts = ingress.spec.rules.map((rule: Json) => rule.host);
      expect(hosts).toEqual([publicHost]);
      // Every host is served with a certificate cert-manager keeps in a Secret of its own.
      expect(ingress.spec.tls).toEqual([{ hosts: [publicHost], secretName: expect.stringMatching(/^[a-z0-9][a-z0-9.-]*$/) }]);
      expect(PARTNER_PATHS.filter((path) => ingressRoutes(ingress, path).length !== 1)).toEqual([]);
      expect(NEVER_ROUTED.filter((path) => ingressRoutes(ingress, path).length !== 0)).toEqual([]);
      // Exactly these rules, not merely no route for the samples above: /v1 and /docs with what is
      // below them (Prefix matches whole path segments), the document itself, nothing else.
      const declared = ingress.spec.rules.flatMap((rule: Json) => (rule.http?.paths ?? []).map((path: Json) => `${path.pathType} ${path.path}`));
      expect(declared.sort()).toEqual(['Exact /openapi.json', 'Prefix /docs', 'Prefix /v1']);
      // No controller annotation that would change what those rules match (use-regex, rewrites, snippets).
      expect(Object.keys(ingress.metadata.annotations ?? {})).toEqual(['cert-manager.io/cluster-issuer']);
    });

    it('pins every image to a version (no :latest, no bare name)', () => {
      const failures: string[] = [];
      for (const object of prod()) {
        const pod = podSpecOf(object);
        if (!pod) continue;
        for (const container of containersOf(pod)) {
          const image: string = container.image ?? '';
          const tag = image.includes('@') ? 'digest' : /:([^:/]+)$/.exec(image)?.[1];
          if (!tag || tag === 'latest') failures.push(`${id(object)} container ${container.name}: image ${image} is not pinned`);
        }
      }
      expect(failures).toEqual([]);
    });

    it('sets PUBLIC_BASE_URL for connection-service to an https origin (the OAuth redirect URI registered at each network)', () => {
      const objects = prod();
      const deployment = objects.find((o) => isApp(o) && appName(o) === 'connection-service');
      const url = new URL(resolvedEnvOf(objects, podSpecOf(deployment).containers[0]).PUBLIC_BASE_URL ?? 'unset:');
      expect({ protocol: url.protocol, host: url.host !== '', search: url.search, hash: url.hash }).toEqual({
        protocol: 'https:',
        host: true,
        search: '',
        hash: '',
      });
    });

    it(`pins CHANNEL_ALLOW_HTTP=false in the env of the services that read ${CHANNELS_SECRET} (env wins over envFrom)`, () => {
      const objects = prod();
      const failures: string[] = [];
      for (const deployment of objects.filter(isApp)) {
        const reads = (podSpecOf(deployment).containers[0].envFrom ?? []).some((source: Json) => source.secretRef?.name === CHANNELS_SECRET);
        if (!reads) continue;
        const pinned = (podSpecOf(deployment).containers[0].env ?? []).filter((e: Json) => e.name === 'CHANNEL_ALLOW_HTTP');
        if (pinned.length !== 1 || pinned[0].value !== 'false')
          failures.push(`${id(deployment)}: CHANNEL_ALLOW_HTTP is ${JSON.stringify(pinned)}, expected one value "false"`);
      }
      expect(failures).toEqual([]);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Files, whatever tools are installed

describe('committed deployment files', () => {
  it("k8s/secrets.env.example lists the apps' secrets with placeholders that the apps refuse to start with", () => {
    const template = readSecretTemplate();
    expect([...template.keys()].sort()).toEqual([
      'ADMIN_TOKEN',
      'CONNECTION_ENCRYPTION_KEY',
      'CONNECTION_ENCRYPTION_KEY_PREVIOUS',
      'IDEMPOTENCY_SECRET_KEY',
      'WEBHOOK_SECRET_KEY',
    ]);
    // Optional and empty: no rotation under way (empty is read as unset).
    const optional = ['CONNECTION_ENCRYPTION_KEY_PREVIOUS'];
    for (const [key, value] of template)
      expect({ key, value: optional.includes(key) ? value : PLACEHOLDER.test(value) }).toEqual({ key, value: optional.includes(key) ? '' : true });
    // The config loader wants 64 hex characters for the keys, and 16 characters at least for the token.
    expect(template.get('WEBHOOK_SECRET_KEY')).not.toMatch(/^[0-9a-fA-F]{64}$/);
    expect(template.get('CONNECTION_ENCRYPTION_KEY')).not.toMatch(/^[0-9a-fA-F]{64}$/);
    expect(template.get('IDEMPOTENCY_SECRET_KEY')).not.toMatch(/^[0-9a-fA-F]{64}$/);
    expect(template.get('ADMIN_TOKEN')!.length).toBeLessThan(16);
  });

  it('k8s/channels.env.example lists every CHANNEL_* variable the services read (a set per channel of the CHANNELS catalog), all empty', () => {
    // The list comes from the code; these anchor it in the catalog, so a broken recording cannot pass.
    for (const channel of CHANNELS) {
      for (const suffix of ['CLIENT_ID', 'CLIENT_SECRET', 'API_URL', 'OAUTH_URL', 'TOKEN_URL'])
        expect(CHANNEL_VARIABLES).toContain(`CHANNEL_${channel.toUpperCase()}_${suffix}`);
    }
    expect(CHANNEL_VARIABLES).toEqual(
      expect.arrayContaining([
        'CHANNEL_GOOGLE_ADS_DEVELOPER_TOKEN',
        'CHANNEL_MICROSOFT_ADS_DEVELOPER_TOKEN',
        'CHANNEL_TIMEOUT_MS',
        'CHANNEL_RETRY_MAX_WAIT',
        'CHANNEL_ALLOW_HTTP',
      ]),
    );
    const template = readEnvFile(join(root, 'k8s', 'channels.env.example'));
    expect([...template.keys()].sort()).toEqual(CHANNEL_VARIABLES);
    // Empty reads as unset: a copy filled in for some channels leaves the others unconfigured.
    expect([...template].filter(([, value]) => value !== '')).toEqual([]);
  });

  it('k8s/.gitignore keeps the filled-in secrets.env and channels.env out of git, and not their templates', () => {
    const ignored = (path: string) => run('git', ['check-ignore', '--no-index', '-q', path]).status === 0;
    expect(['k8s/secrets.env', 'k8s/channels.env', 'k8s/secrets.env.example', 'k8s/channels.env.example'].map((path) => [path, ignored(path)])).toEqual([
      ['k8s/secrets.env', true],
      ['k8s/channels.env', true],
      ['k8s/secrets.env.example', false],
      ['k8s/channels.env.example', false],
    ]);
  });

  it('hold nothing that looks like a real key, token or private key', () => {
    const files = ['Dockerfile', 'docker-compose.yml', '.dockerignore'].map((file) => join(root, file));
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry);
        if (statSync(path).isDirectory()) walk(path);
        // The filled-in secrets files are git-ignored (k8s/.gitignore) and meant to hold real values.
        else if (!/(^|\.)(secrets?|channels)\.env$/.test(entry)) files.push(path);
      }
    };
    if (existsSync(join(root, 'k8s'))) walk(join(root, 'k8s'));
    const suspicious = [/\b[0-9a-fA-F]{64}\b/, /-----BEGIN [A-Z ]*PRIVATE KEY-----/, /\bmk_(live|test)_[A-Za-z0-9]{8,}/];
    const failures = files
      .filter((file) => existsSync(file))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, index) => ({ line, index }))
          .filter(({ line }) => suspicious.some((pattern) => pattern.test(line)))
          .map(({ index }) => `${relative(root, file)}:${index + 1}`),
      );
    expect(failures).toEqual([]);
  });
});
