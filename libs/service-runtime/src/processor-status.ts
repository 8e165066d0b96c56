import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Counter, Gauge } from 'prom-client';
import { registry } from './metrics';

/**
 * What each checkpointed processor of this process is doing, for /readyz and /metrics:
 * `active` (holds its lease and follows the event store), `standby` (another replica holds it),
 * `refusing` (its checkpoint is ahead of the event store's head, or one the event store refuses: see CheckpointedProcessor).
 */
export type ProcessorState = 'stopped' | 'standby' | 'active' | 'refusing';

const problems = new Map<string, string>();

export const processorActive = new Gauge({
  name: 'event_processor_active',
  help: 'Whether this process runs the checkpointed processor (1: it holds its lease), or another replica does (0).',
  labelNames: ['processor'] as const,
  registers: [registry],
});

export const processorRefusing = new Gauge({
  name: 'event_processor_checkpoint_ahead',
  help: "1 while a checkpointed processor refuses to run from its checkpoint: ahead of the event store's head, or a position the event store refuses (reset it: npm run ops -- processors reset NAME --to-start|--to-head).",
  labelNames: ['processor'] as const,
  registers: [registry],
});

export const processorLeaseTakes = new Counter({
  name: 'event_processor_lease_takes_total',
  help: 'Times this process took a checkpointed processor’s lease (at start, or over from a replica that died, stopped or was paused).',
  labelNames: ['processor'] as const,
  registers: [registry],
});

/** Records a processor's state; a problem (refusing) makes the process not ready until it clears. */
export function reportProcessorState(name: string, state: ProcessorState, problem?: string): void {
  processorActive.set({ processor: name }, state === 'active' ? 1 : 0);
  processorRefusing.set({ processor: name }, state === 'refusing' ? 1 : 0);
  if (state === 'refusing' && problem) problems.set(name, problem);
  else problems.delete(name);
}

/** The processors of this process that refuse to run, each with why (for /readyz). */
export function processorProblems(): Record<string, string> {
  return Object.fromEntries(problems);
}

/** How processors share the work across replicas (see CheckpointedProcessor's `lease`). */
export interface ProcessorLeaseOptions {
  /** Who holds it: one name per process. */
  holder: string;
  /** How long a lease lasts unless renewed: how long a dead holder's processors wait for a takeover. */
  ttlMs: number;
  /** How often the holder renews it, and a standby tries to take it. */
  renewMs: number;
  /**
   * Take the lease at the first start whoever holds it: for the standalone process, the only one by
   * construction, where a holder can only be a previous run that crashed.
   */
  seizeAtStart?: boolean;
}

/** This process's name as a lease holder: host (the pod's name on Kubernetes), pid and a random part. */
export const PROCESS_HOLDER = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

let defaults: ProcessorLeaseOptions | null = null;

/** The lease settings of every processor of this process that names none itself (set once at start from the config). */
export function useProcessorLeases(options: ProcessorLeaseOptions | null): void {
  defaults = options;
}

export function processorLeaseDefaults(): ProcessorLeaseOptions | null {
  return defaults;
}
