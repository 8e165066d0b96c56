import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AccountDirectory } from '@campaign-ops/accounts';
import { KeyMode } from '@campaign-ops/account-domain';
import { unwrap } from '@campaign-ops/api-errors';
import { Bus, InProcessBus, NatsBus } from '@campaign-ops/bus';
import { connectWithRetry, loadConfig, openStores, ServiceConfig } from '@campaign-ops/service-runtime';

const USAGE = `campaign-ops operations (works on the stores of DATA_DIR, default ./data, and on the bus:
NATS JetStream at NATS_URL when set, else the standalone's DATA_DIR/bus.sqlite)

  accounts create --name NAME [--credits N]        open an account (N credits in each mode, default 1000)
  keys create --account ACCT_ID --mode live|test   issue an API key (shown once)
  keys revoke KEY_ID                               revoke a key at once
  credits grant --account ACCT_ID --mode live|test --amount N
  bus parked [--durable NAME] [--limit N]          messages a consumer gave up on after maxDeliver
                                                   deliveries, oldest first (default limit 100)
  bus replay ID                                    deliver a parked message again to the consumer that
                                                   parked it (delivery count starting over), and unpark it

Output is JSON. Example: npm run ops -- accounts create --name "Acme"`;

class UsageError extends Error {}

function option(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value === 'boolean') throw new UsageError(`--${name} takes a value`);
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

function mode(value: string): KeyMode {
  if (value !== 'live' && value !== 'test') throw new UsageError('--mode must be live or test');
  return value;
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
      NatsBus.connect({ servers: config.natsUrl!, name: config.app, streamReplicas: config.natsStreamReplicas }),
    );
  }
  return InProcessBus.open({ file: join(config.dataDir, 'bus.sqlite') });
}

async function runBus(config: ServiceConfig, action: string | undefined, id: string | undefined, values: Record<string, string | boolean | undefined>): Promise<unknown> {
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
        account: { type: 'string' },
        mode: { type: 'string' },
        amount: { type: 'string' },
        durable: { type: 'string' },
        limit: { type: 'string' },
        help: { type: 'boolean' },
      },
    });
  } catch (error) {
    if (String((error as { code?: string }).code).startsWith('ERR_PARSE_ARGS_')) throw new UsageError((error as Error).message);
    throw error;
  }
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parse(argv);
  const [resource, action, id] = positionals;
  if (values.help || !resource) throw new UsageError('');
  const config = loadConfig('ops-cli');
  if (resource === 'bus') return runBus(config, action, id, values);
  const stores = await openStores(config);
  const directory = new AccountDirectory(stores.eventStore, stores.readStore);
  try {
    switch (`${resource} ${action}`) {
      case 'accounts create': {
        // The running service applies the starting credits when it sees the account's event.
        const { account } = await directory.openAccount(option(values, 'name'), values.credits === undefined ? undefined : count(values.credits, 'credits'));
        return { id: account.id, name: account.name, credits_granted: account.credits, created_at: account.created_at };
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

run(process.argv.slice(2)).then(
  (result) => process.stdout.write(`${JSON.stringify(result, null, 2)}\n`),
  (error: Error) => {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message ? `${error.message}\n\n` : ''}${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  },
);
