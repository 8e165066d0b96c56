import { parseArgs } from 'node:util';
import { EventStore } from '@campaign-ops/event-store';
import { ReadStore } from '@campaign-ops/read-store';

/**
 * `processors show NAME` and `processors reset NAME --to-start|--to-head`: a checkpointed
 * processor's checkpoint beside the event store's head, and the reset for a processor that
 * refuses to run because its checkpoint is ahead of the head (an event store recreated or restored
 * while the read store kept its checkpoints). The reset revokes the processor's lease in the same
 * step, so a running holder stops at its next checkpoint write, and whoever takes the lease next
 * starts from the new checkpoint; a refusing processor notices within 5 s and runs.
 */
export const PROCESSOR_USAGE = `  processors show NAME                             a processor's checkpoint, the event store's head, its lease
  processors reset NAME --to-start|--to-head       move its checkpoint (and revoke its lease): --to-start handles
                                                   every event the event store holds again, --to-head skips them`;

export class ProcessorUsageError extends Error {}

export async function runProcessors(argv: string[], stores: { eventStore: EventStore; readStore: ReadStore }): Promise<unknown> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { 'to-start': { type: 'boolean' }, 'to-head': { type: 'boolean' } } });
  } catch (error) {
    throw new ProcessorUsageError((error as Error).message);
  }
  const [action, name] = parsed.positionals;
  if ((action !== 'show' && action !== 'reset') || !name)
    throw new ProcessorUsageError(`processors ${action ?? ''} needs show|reset and a processor's name (e.g. dispatch-views)`);
  const { checkpoints } = stores.readStore;
  const describe = async () => {
    const [checkpoint, head, lease] = await Promise.all([checkpoints.get(name), stores.eventStore.lastPosition(), checkpoints.lease(name)]);
    const ahead = checkpoint !== undefined && /^\d+$/.test(checkpoint) && (head === null || BigInt(checkpoint) > BigInt(head));
    return {
      processor: name,
      checkpoint: checkpoint ?? null,
      head,
      ahead,
      lease: lease && {
        holder: lease.holder || null,
        epoch: lease.epoch,
        expires_at: lease.expiresAt.toISOString(),
        held: lease.expiresAt.getTime() > Date.now(),
      },
    };
  };
  if (action === 'show') return describe();
  const { 'to-start': toStart, 'to-head': toHead } = parsed.values;
  if (toStart === toHead)
    throw new ProcessorUsageError('processors reset needs one of --to-start (handle every event again) or --to-head (skip every event stored now)');
  const before = await checkpoints.get(name);
  const position = toStart ? undefined : ((await stores.eventStore.lastPosition()) ?? undefined);
  await checkpoints.reset(name, position);
  return { reset: name, from: before ?? null, to: position ?? null, ...(await describe()) };
}
