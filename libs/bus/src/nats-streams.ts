// The JetStream streams the bus needs (events on `evt.>`, parked messages on `parked.>`): created
// or brought to their settings at connect, or only checked when an operator owns them.
import { JetStreamManager, nanos, StorageType } from 'nats';
import { errorMessage } from './payload';
import { jsErrorCode } from './nats-headers';

const JS_ERR_STREAM_NOT_FOUND = 10059;

export interface StreamSettings {
  name: string;
  subjects: string[];
  duplicateWindowMs: number;
  replicas: number;
  /** `max_age`: messages older than this are removed, acked or not. */
  maxAgeMs: number;
}

/** A positive whole number of ms above the de-duplication window (the server refuses a smaller `max_age`). */
export function assertMaxAge(option: string, maxAgeMs: number, duplicateWindowMs: number): number {
  if (!Number.isInteger(maxAgeMs) || maxAgeMs <= 0) throw new Error(`${option} must be a positive whole number of ms, got: ${maxAgeMs}`);
  if (maxAgeMs < duplicateWindowMs) throw new Error(`${option} (${maxAgeMs} ms) must not be shorter than duplicateWindowMs (${duplicateWindowMs} ms)`);
  return maxAgeMs;
}

/**
 * Creates the stream if it is missing, or brings an existing one to these settings (exported for its
 * spec). Not `manage`: only checks that it exists (its settings are the operator's).
 */
export async function ensureStream(jsm: JetStreamManager, settings: StreamSettings, manage = true, lostRace = false): Promise<void> {
  const { name, subjects, duplicateWindowMs, replicas, maxAgeMs } = settings;
  const duplicateWindow = nanos(duplicateWindowMs);
  const maxAge = nanos(maxAgeMs);
  const infoOf = () =>
    jsm.streams.info(name).catch((error: unknown) => {
      if (jsErrorCode(error) === JS_ERR_STREAM_NOT_FOUND) return undefined;
      throw error;
    });
  const existing = await infoOf();
  if (!manage) {
    if (!existing) throw new Error(`JetStream stream ${name} does not exist: an operator creates it with \`ops bus setup\` (the nats-streams Job)`);
    return;
  }
  try {
    if (!existing) {
      // Two services starting together both land here. Adding an identical stream is idempotent,
      // but the server may refuse the one that comes second ("subjects overlap with an existing
      // stream", seen with three at once): then the stream is there, and is checked as any other.
      await jsm.streams.add({ name, subjects, storage: StorageType.File, duplicate_window: duplicateWindow, num_replicas: replicas, max_age: maxAge });
    } else if (
      existing.config.duplicate_window !== duplicateWindow ||
      existing.config.subjects.join() !== subjects.join() ||
      existing.config.num_replicas !== replicas ||
      existing.config.max_age !== maxAge
    ) {
      // A stream created before retention was set (max_age 0, no limit) gets it here.
      await jsm.streams.update(name, { subjects, duplicate_window: duplicateWindow, num_replicas: replicas, max_age: maxAge });
    }
  } catch (error) {
    if (!existing && !lostRace && (await infoOf())) return ensureStream(jsm, settings, manage, true);
    // E.g. "replicas > 1 not supported in non-clustered mode": say which stream and setting.
    throw new Error(
      `cannot ${existing ? 'update' : 'create'} JetStream stream ${name} (${replicas} replica(s), max age ${maxAgeMs} ms, subjects ${subjects.join(', ')}): ${errorMessage(error)}`,
    );
  }
}
