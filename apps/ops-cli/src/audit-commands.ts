import { accountStreamId } from '@campaign-ops/account-domain';
import { connectionStreamId } from '@campaign-ops/connection-domain';
import { dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { EventStore } from '@campaign-ops/event-store';
import { webhookStreamId } from '@campaign-ops/webhook-domain';
import { EmptyExportError, exportEvents, ExportFilter, verifyExport } from '@campaign-ops/event-export';
import { checkReadModels, OPERATIONAL_COLLECTIONS, READ_MODELS, readModelNamed, rebuildReadModels } from '@campaign-ops/read-model-rebuild';
import { ReadStore } from '@campaign-ops/read-store';
import { inspect, timelineText } from './inspect';
import { progressOn } from './progress';

/** What a command answers: text for people, JSON (with --json) for scripts, and the exit code. */
export interface Outcome {
  text: string;
  json: unknown;
  code: number;
}

type Values = Record<string, string | boolean | string[] | undefined>;
type Stores = { eventStore: EventStore; readStore: ReadStore };

export class AuditUsageError extends Error {}

const text = (value: Values, name: string): string | undefined => {
  const given = value[name];
  if (given === undefined) return undefined;
  if (typeof given !== 'string' || given === '') throw new AuditUsageError(`--${name} takes a value`);
  return given;
};

export const AUDIT_COMMANDS = ['export', 'verify', 'rebuild', 'inspect'];

/** Resource ids that name their stream: `--stream dsp_…` is `dispatch-dsp_…`. */
const STREAM_OF_ID: ReadonlyArray<[prefix: string, streamOf: (id: string) => string]> = [
  ['dsp_', dispatchStreamId],
  ['con_', connectionStreamId],
  ['whk_', webhookStreamId],
  ['acct_', accountStreamId],
];

/**
 * The stream `--stream` names: a stream id as stored, or a resource id whose stream it is. A
 * stream without events is refused: an export of nothing would look like an audit of nothing.
 */
async function streamNamed(given: string | undefined, eventStore: EventStore): Promise<string | undefined> {
  if (given === undefined) return undefined;
  const kind = /^(key|evt|dlv|req|whsec)_/.exec(given)?.[1];
  if (kind !== undefined)
    throw new AuditUsageError(
      `--stream ${given}: a ${kind}_ id has no stream of its own; --stream takes a stream (dispatch-dsp_…) or a dsp_, con_, whk_ or acct_ id`,
    );
  const stream = STREAM_OF_ID.find(([prefix]) => given.startsWith(prefix))?.[1](given) ?? given;
  if ((await eventStore.readStream(stream, { maxCount: 1 })).length === 0) {
    throw new AuditUsageError(
      `no events in stream ${stream}: streams are named dispatch-dsp_…, connection-con_…, webhook-whk_…, account-acct_… and credits-acct_…-test|live (a dsp_, con_, whk_ or acct_ id is taken for its stream)`,
    );
  }
  return stream;
}

export async function runAudit(command: string, args: string[], values: Values, stores: Stores): Promise<Outcome> {
  switch (command) {
    case 'export':
      return runExport(values, stores);
    case 'verify':
      return runVerify(args[0], values, stores);
    case 'rebuild':
      return runRebuild(args, values, stores);
    case 'inspect':
      return runInspect(args[0], stores);
    default:
      throw new AuditUsageError(`unknown command: ${command}`);
  }
}

async function runExport(values: Values, { eventStore }: Stores): Promise<Outcome> {
  const out = text(values, 'out');
  if (!out) throw new AuditUsageError('export needs --out FILE');
  const filter: ExportFilter = {
    stream: await streamNamed(text(values, 'stream'), eventStore),
    category: text(values, 'category'),
    account: text(values, 'account'),
    from: text(values, 'from'),
    to: text(values, 'to'),
  };
  const progress = progressOn(process.stderr, 'export');
  let manifest;
  try {
    manifest = await exportEvents(eventStore, filter, out, (done, fraction) => progress.update(done, fraction), {
      refuseEmpty: values['allow-empty'] !== true,
    });
  } catch (error) {
    if (error instanceof EmptyExportError) throw new Error(`export: ${error.message} (--allow-empty writes an empty export and its manifest)`);
    throw error;
  } finally {
    progress.stop();
  }
  return {
    json: manifest,
    text: `exported ${manifest.count} events to ${out} (last position ${manifest.last_position ?? '-'})\nfinal hash ${manifest.final_hash}\nmanifest ${out}.manifest.json`,
    code: 0,
  };
}

async function runVerify(file: string | undefined, values: Values, { eventStore }: Stores): Promise<Outcome> {
  if (!file) throw new AuditUsageError('verify needs the export file');
  const progress = progressOn(process.stderr, 'verify', 'lines');
  const result = await verifyExport(file, eventStore, (done, fraction) => progress.update(done, fraction), {
    allowMissingManifest: values['no-manifest'] === true,
  });
  progress.stop();
  if (!result.ok) return { json: result, text: `${file}${result.line === null ? '' : `, line ${result.line}`}: ${result.reason}`, code: 1 };
  const manifest = result.manifest === 'matches' ? 'the manifest matches' : 'no manifest beside it (--no-manifest)';
  const store = result.complete_against_store
    ? `every line as in the event store, none missing from the manifest's selection (${JSON.stringify(result.selection?.filter ?? {})} up to position ${result.selection?.read_up_to ?? '-'})`
    : 'every line as in the event store';
  return { json: result, text: `${file}: ${result.lines} lines, chain intact, ${manifest}, ${store}\nfinal hash ${result.final_hash}`, code: 0 };
}

async function runRebuild(names: string[], values: Values, { eventStore, readStore }: Stores): Promise<Outcome> {
  if (values.all && names.length) throw new AuditUsageError('rebuild takes read model names or --all, not both');
  if (!values.all && !names.length) {
    throw new AuditUsageError(
      `rebuild needs read model names or --all; rebuildable: ${READ_MODELS.map((m) => m.name).join(', ')} ` +
        `(not rebuildable, operational state: ${OPERATIONAL_COLLECTIONS.map((c) => c.name).join(', ')})`,
    );
  }
  let models;
  try {
    models = values.all ? READ_MODELS : names.map(readModelNamed);
  } catch (error) {
    throw new AuditUsageError((error as Error).message);
  }
  const progress = progressOn(process.stderr, values.check ? 'rebuild --check' : 'rebuild');
  const onProgress = (done: number, fraction: number) => progress.update(done, fraction);
  if (values.check) {
    const report = await checkReadModels(eventStore, readStore, models, { onProgress });
    progress.stop();
    const lines = report.collections.map((c) => `${c.name}: ${c.live} live, ${c.rebuilt} rebuilt, ${c.differences} different`);
    for (const d of report.differences) {
      lines.push(
        `  ${d.collection} ${d.id}: ${d.kind.replace(/_/g, ' ')}${d.kind === 'differs' ? `\n    live:    ${JSON.stringify(d.live)}\n    rebuilt: ${JSON.stringify(d.rebuilt)}` : ''}`,
      );
    }
    const different = report.collections.reduce((sum, c) => sum + c.differences, 0);
    lines.push(different === 0 ? `no differences (${report.events} events replayed, up to position ${report.position ?? '-'})` : `${different} differences`);
    return { json: report, text: lines.join('\n'), code: different === 0 ? 0 : 1 };
  }
  const report = await rebuildReadModels(eventStore, readStore, models, { onProgress });
  progress.stop();
  const rate = Math.round(report.events / Math.max(report.seconds, 0.001));
  return {
    json: report,
    text: [
      `rebuilt ${report.read_models.join(', ')} from ${report.events} events in ${report.seconds.toFixed(1)} s (${rate} events/s), swapped in at position ${report.position ?? '-'}`,
      ...report.collections.map((c) => `  ${c.name}: ${c.documents} documents`),
      `checkpoints set: ${report.checkpoints.join(', ') || 'none'}`,
    ].join('\n'),
    code: 0,
  };
}

async function runInspect(id: string | undefined, { eventStore, readStore }: Stores): Promise<Outcome> {
  if (!id) throw new AuditUsageError('inspect needs a dispatch (dsp_…) or connection (con_…) id');
  if (!/^(dsp|con)_/.test(id)) throw new AuditUsageError(`inspect takes a dispatch (dsp_…) or connection (con_…) id, not ${id}`);
  const timeline = await inspect(eventStore, readStore, id);
  if (!timeline) return { json: { error: `no such dispatch or connection: ${id}` }, text: `no such dispatch or connection: ${id}`, code: 1 };
  return { json: timeline, text: timelineText(timeline), code: 0 };
}
