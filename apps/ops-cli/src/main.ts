import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AccountDirectory } from '@campaign-ops/accounts';
import { Mode } from '@campaign-ops/account-domain';
import { unwrap } from '@campaign-ops/api-errors';
import { isRegistrableRedirectUri } from '@campaign-ops/api-contract';
import { Bus } from '@campaign-ops/bus';
import { DEFAULT_STREAM_NAME, InProcessBus, NatsBus, PARKED_STREAM_SUFFIX } from '@campaign-ops/adapters/bus';
import {
  connectWithRetry,
  DATA_DIR_FILES,
  loadConfig,
  natsAuthorizationFile,
  natsBusOptions,
  natsUsers,
  openStores,
  ServiceConfig,
} from '@campaign-ops/service-runtime';
import { AUDIT_COMMANDS, AuditUsageError, Outcome, runAudit } from './audit-commands';
import { BACKUP_USAGE, BackupUsageError, runBackup, runRestore } from './backup-commands';
import { PROCESSOR_USAGE, ProcessorUsageError, runProcessors } from './processor-commands';
import { runVault, VAULT_USAGE, VaultUsageError } from './vault-commands';

const USAGE = `campaign-ops operations (works on the stores of DATA_DIR, default ./data, and on the bus:
NATS JetStream at NATS_URL when set, else the standalone's DATA_DIR/bus.sqlite)

  accounts create --name NAME [--credits N] [--redirect-uri URL]...
                                                   open an account (N credits in each mode, default 1000)
                                                   with the OAuth redirect URIs its rounds may send people to
  accounts update ACCT_ID [--name NAME] [--redirect-uri URL]... [--no-redirect-uris]
                                                   rename it, or replace its OAuth redirect URIs
  keys create --account ACCT_ID --mode live|test   issue an API key (shown once)
  keys revoke KEY_ID                               revoke a key at once
  credits grant --account ACCT_ID --mode live|test --amount N
  bus parked [--durable NAME] [--limit N]          messages a consumer gave up on after maxDeliver
                                                   deliveries, oldest first (default limit 100)
  bus replay ID                                    deliver a parked message again to the consumer that
                                                   parked it (delivery count starting over), and unpark it
  bus setup                                        create the JetStream streams, or bring them to the
                                                   settings (NATS_STREAM_REPLICAS): the services' NATS users
                                                   may not (k8s/datastores/nats-auth.conf)
  bus authorization                                print nats-server's users and permissions, one user per
                                                   service (what k8s/datastores/nats-auth.conf holds)

  export --out FILE [--stream ID | --category NAME] [--account ACCT_ID] [--from ISO] [--to ISO] [--allow-empty]
                                                   events in commit order as hash-chained JSON lines, and
                                                   FILE.manifest.json; signing secrets and key hashes redacted;
                                                   --stream takes a stream (dispatch-dsp_…) or a dsp_, con_,
                                                   whk_ or acct_ id, and refuses a stream without events (exit 2);
                                                   a selection without events writes nothing and exits 1 naming
                                                   the filter, unless --allow-empty (an empty file and manifest)
  verify FILE [--no-manifest]                      the chain, the manifest, then the event store walked as the
                                                   export did: every line as stored, none missing; exit 1 naming
                                                   the first line that differs (no manifest: exit 1, unless
                                                   --no-manifest, which checks each line against the store)
  rebuild NAME... | --all [--check]                replay the event store into fresh read models and swap them
                                                   in while the services run; --check only compares them with
                                                   the live ones (exit 1 on a difference)
  inspect DSP_ID|CON_ID                            a dispatch's or connection's timeline: events, provider
                                                   attempts, webhook deliveries and each of their attempts,
                                                   with times and request ids

${BACKUP_USAGE}

${PROCESSOR_USAGE}
${VAULT_USAGE}

Output is JSON. export, verify, rebuild, inspect, backup and restore print text, or JSON with --json
(their progress goes to stderr). Example: npm run ops -- accounts create --name "Acme"`;

class UsageError extends Error {}

/** The command line's options: a string, a flag, or (options given more than once) a list. */
type Values = Record<string, string | boolean | string[] | undefined>;

function option(values: Values, name: string): string {
  const value = values[name];
  if (typeof value === 'boolean' || Array.isArray(value)) throw new UsageError(`--${name} takes one value`);
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

function mode(value: string): Mode {
  if (value !== 'live' && value !== 'test') throw new UsageError('--mode must be live or test');
  return value;
}

/** The --redirect-uri values, each as the Admin API takes them (docs/api.md#keys-and-modes); undefined when none was given. */
function redirectUris(values: Values[string]): string[] | undefined {
  if (values === undefined) return undefined;
  const uris = [values].flat().map((value) => (typeof value === 'string' ? value : ''));
  if (uris.length > 20) throw new UsageError('--redirect-uri: at most 20');
  for (const uri of uris)
    if (!isRegistrableRedirectUri(uri))
      throw new UsageError(`--redirect-uri ${uri}: must be an absolute https URL (http only for localhost) without query or fragment`);
  return uris;
}

function count(value: string, name: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

/**
 * The bus as the services open it: NATS when NATS_URL is set; else the standalone's SQLite file,
 * without releasing leases (the running standalone holds them, and would handle twice what it holds).
 */
async function openBus(config: ServiceConfig): Promise<Bus> {
  if (config.natsUrl) {
    return connectWithRetry('NATS', 'NATS_URL', config.startupTimeoutMs, () =>
      NatsBus.connect({ servers: config.natsUrl!, name: config.app, ...natsBusOptions(config) }),
    );
  }
  return InProcessBus.open({ file: join(config.dataDir, DATA_DIR_FILES.bus) });
}

async function runBus(config: ServiceConfig, action: string | undefined, id: string | undefined, values: Values): Promise<unknown> {
  if (action === 'authorization') return new Printed({ text: natsAuthorizationFile().trimEnd(), json: natsUsers(), code: 0 });
  if (action === 'setup') {
    if (!config.natsUrl) throw new UsageError('bus setup is for NATS: set NATS_URL (the standalone sets its own bus up)');
    const bus = await openBus({ ...config, natsManageStreams: true });
    await bus.close();
    return { streams: [DEFAULT_STREAM_NAME, `${DEFAULT_STREAM_NAME}${PARKED_STREAM_SUFFIX}`], replicas: config.natsStreamReplicas };
  }
  if (action !== 'parked' && action !== 'replay') throw new UsageError(`unknown command: bus ${action ?? ''}`);
  if (action === 'replay' && !id) throw new UsageError('bus replay needs the id of a parked message (see bus parked)');
  const limit = values.limit === undefined ? undefined : count(option(values, 'limit'), 'limit');
  if (limit === 0) throw new UsageError('--limit must be at least 1');
  const durable = values.durable === undefined ? undefined : option(values, 'durable');
  const bus = await openBus(config);
  try {
    if (action === 'parked') return await bus.listParked({ durable, limit });
    await bus.replayParked(id!);
    return { replayed: id };
  } finally {
    await bus.close();
  }
}

/** The command line's words, or a UsageError for an unknown option or one without its value. */
function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        credits: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        'no-redirect-uris': { type: 'boolean' },
        account: { type: 'string' },
        mode: { type: 'string' },
        amount: { type: 'string' },
        durable: { type: 'string' },
        limit: { type: 'string' },
        out: { type: 'string' },
        stream: { type: 'string' },
        category: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        all: { type: 'boolean' },
        check: { type: 'boolean' },
        'no-manifest': { type: 'boolean' },
        'allow-empty': { type: 'boolean' },
        force: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    });
  } catch (error) {
    if (String((error as { code?: string }).code).startsWith('ERR_PARSE_ARGS_')) throw new UsageError((error as Error).message);
    throw error;
  }
}

/** A command's outcome, printed; its own usage error shown as the command line's; the stores closed either way. */
async function printed(
  stores: Awaited<ReturnType<typeof openStores>>,
  usageError: new (message: string) => Error,
  command: () => Promise<Outcome>,
): Promise<Printed> {
  try {
    return new Printed(await command());
  } catch (error) {
    if (error instanceof usageError) throw new UsageError(error.message);
    throw error;
  } finally {
    await stores.eventStore.close();
    await stores.readStore.close();
  }
}

/** `--help`: the usage, on stdout, exit 0. */
class Help {}

/** A result printed as JSON (the account and bus commands), or an Outcome of the audit commands. */
class Printed {
  constructor(readonly outcome: Outcome) {}
}

async function run(argv: string[]): Promise<unknown> {
  if (argv[0] === 'processors' && !argv.includes('--help')) {
    const stores = await openStores(loadConfig('ops-cli'));
    try {
      return await runProcessors(argv.slice(1), stores);
    } catch (error) {
      throw error instanceof ProcessorUsageError ? new UsageError(error.message) : error;
    } finally {
      await stores.eventStore.close();
      await stores.readStore.close();
    }
  }
  const { values, positionals } = parse(argv);
  const [resource, action, id] = positionals;
  if (values.help || resource === 'help') return new Help();
  if (!resource) throw new UsageError('');
  const config = loadConfig('ops-cli');
  if (resource === 'bus') return runBus(config, action, id, values);
  // Before the stores are opened: opening creates them, and a restore refuses a DATA_DIR that holds any.
  if (resource === 'backup' || resource === 'restore') {
    if (action !== undefined) throw new UsageError(`${resource} takes no ${action}`);
    try {
      return new Printed(await (resource === 'backup' ? runBackup : runRestore)(config, values));
    } catch (error) {
      throw error instanceof BackupUsageError ? new UsageError(error.message) : error;
    }
  }
  const stores = await openStores(config);
  if (resource === 'vault') return printed(stores, VaultUsageError, () => runVault(action, stores.readStore, config.connections));
  if (AUDIT_COMMANDS.includes(resource)) return printed(stores, AuditUsageError, () => runAudit(resource, positionals.slice(1), values, stores));
  const directory = new AccountDirectory(stores.eventStore, stores.readStore);
  try {
    switch (`${resource} ${action}`) {
      case 'accounts create': {
        // The running service applies the starting credits when it sees the account's event.
        const credits = values.credits === undefined ? undefined : count(option(values, 'credits'), 'credits');
        const { account } = await directory.openAccount(option(values, 'name'), credits, redirectUris(values['redirect-uri']) ?? []);
        return {
          id: account.id,
          name: account.name,
          credits_granted: account.credits,
          oauth_redirect_uris: account.oauth_redirect_uris,
          created_at: account.created_at,
        };
      }
      case 'accounts update': {
        if (!id) throw new UsageError('accounts update needs the account id');
        const uris = values['no-redirect-uris'] ? [] : redirectUris(values['redirect-uri']);
        const name = values.name === undefined ? undefined : option(values, 'name');
        if (name === undefined && uris === undefined) throw new UsageError('accounts update needs --name, --redirect-uri or --no-redirect-uris');
        return unwrap(await directory.changeSettings(id, { name, oauthRedirectUris: uris }));
      }
      case 'keys create':
        return unwrap(await directory.issueKey(option(values, 'account'), mode(option(values, 'mode'))));
      case 'keys revoke':
        if (!id) throw new UsageError('keys revoke needs the key id');
        return unwrap(await directory.revokeKey(id));
      case 'credits grant':
        return unwrap(await directory.grantCredits(option(values, 'account'), mode(option(values, 'mode')), count(option(values, 'amount'), 'amount'))).account;
      default:
        throw new UsageError(`unknown command: ${resource} ${action ?? ''}`);
    }
  } finally {
    await stores.eventStore.close();
    await stores.readStore.close();
  }
}

const asJson = process.argv.includes('--json');

run(process.argv.slice(2)).then(
  (result) => {
    if (result instanceof Help) return void process.stdout.write(`${USAGE}\n`);
    if (!(result instanceof Printed)) return void process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${asJson ? JSON.stringify(result.outcome.json) : result.outcome.text}\n`);
    process.exitCode = result.outcome.code;
  },
  (error: Error) => {
    if (error instanceof UsageError) {
      // A refusal in one line, the way to the usage after it; without a command, the usage itself.
      process.stderr.write(error.message ? `${error.message}\n(npm run ops -- --help lists every command)\n` : `${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  },
);
