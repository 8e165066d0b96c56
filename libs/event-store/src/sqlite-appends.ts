// How the embedded event store appends: the checks and inserts of one append inside the group's
// transaction (SqliteAppends), on the store's own connection or in a writer thread of its own
// (AppendThread, sqlite-append.worker.ts), which commits, and waits for the disk, off the caller's thread.
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { GroupCommit } from '@campaign-ops/sqlite-wal';
import { PerTurn, startWorkerBeside } from '@campaign-ops/worker-start';
import { AppendResult, ExpectedRevision, WrongExpectedRevisionError } from './event-store.port';
import { EventRow, isSameAppend, satisfies, SerializedEvent, StoredEventRef } from './sqlite-event-rows';

/**
 * Some ids of an append are already stored, but not as an earlier run of this very append
 * (other stream, other revisions, only part of the batch): a caller bug, not a retry.
 */
export class DuplicateEventIdError extends Error {
  constructor(
    readonly streamId: string,
    readonly eventIds: string[],
  ) {
    super(`stream ${streamId}: event ids already stored elsewhere or in another append: ${eventIds.join(', ')}`);
    this.name = 'DuplicateEventIdError';
  }
}

/** One append as the writer takes it: the events' ids and types, and their texts (serialized by the caller). */
export interface AppendRequest {
  streamId: string;
  events: Array<{ id: string; type: string }>;
  texts: SerializedEvent[];
  expected: ExpectedRevision;
}

/** What an append wrote: its result, and each new event's position and revision (none for a retry), all at `occurredAt`. */
export interface AppendOutcome {
  result: AppendResult;
  written: Array<[position: number, revision: number]>;
  occurredAt: string;
}

/** The insert failed on the table's unique event ids (not on a stream's revisions: the write lock rules those out). */
// (Duck-typed: better-sqlite3's errors may come from another realm than this module's Error, as under Jest.)
const isEventIdClash = (error: unknown): boolean => {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'SQLITE_CONSTRAINT_UNIQUE' && typeof message === 'string' && message.includes('events.event_id');
};

/** The appends of one connection, each run inside the group's IMMEDIATE transaction (which holds the write lock). */
export class SqliteAppends {
  private readonly lastRevisionQuery;
  private readonly eventRefQuery;
  private readonly insertEvent;

  constructor(db: Database.Database) {
    this.lastRevisionQuery = db.prepare<[string], { revision: number | null }>('SELECT MAX(revision) AS revision FROM events WHERE stream_id = ?');
    this.eventRefQuery = db.prepare<[string], StoredEventRef>('SELECT position, stream_id, revision FROM events WHERE event_id = ?');
    this.insertEvent = db.prepare<[string, string, number, string, string, string, string, 1 | null]>(
      `INSERT INTO events (event_id, stream_id, revision, type, data, metadata, occurred_at, canonical)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  append({ streamId, events, texts, expected }: AppendRequest): AppendOutcome {
    // Most appends are new: the revision is checked and the events inserted, and only an id the
    // table already holds (a retry, or a caller's bug) costs a look at where each event is.
    const actual = this.lastRevisionQuery.get(streamId)!.revision;
    if (satisfies(expected, actual)) {
      const outcome = this.outcome();
      try {
        return this.insertAll(streamId, events, texts, actual, outcome);
      } catch (error) {
        if (!isEventIdClash(error)) throw error;
        // Some were inserted: those ids were new, so this is not a retry (the savepoint takes them back).
        if (outcome.written.length > 0) throw new DuplicateEventIdError(streamId, this.storedIds(events.slice(outcome.written.length)));
      }
    }
    return this.appendKnownIds({ streamId, events, texts, expected });
  }

  /** An append some of whose ids may be stored: a retry of one that succeeded gets its answer again; else the checks in order. */
  private appendKnownIds({ streamId, events, texts, expected }: AppendRequest): AppendOutcome {
    const stored = events.map((event) => this.eventRefQuery.get(event.id));
    // A retry of an append that did succeed (its answer was lost) gets that append's answer again.
    if (isSameAppend(streamId, stored, expected)) {
      const last = stored[stored.length - 1]!;
      return { result: { nextRevision: last.revision, position: String(last.position) }, written: [], occurredAt: '' };
    }
    const actual = this.lastRevisionQuery.get(streamId)!.revision;
    if (!satisfies(expected, actual)) throw new WrongExpectedRevisionError(streamId, expected, actual ?? 'no_stream');
    const clashing = events.filter((_, i) => stored[i] !== undefined).map((event) => event.id);
    if (clashing.length > 0) throw new DuplicateEventIdError(streamId, clashing);
    return this.insertAll(streamId, events, texts, actual, this.outcome());
  }

  private storedIds(events: AppendRequest['events']): string[] {
    return events.filter((event) => this.eventRefQuery.get(event.id) !== undefined).map((event) => event.id);
  }

  private outcome(): AppendOutcome {
    return { result: { nextRevision: -1, position: '' }, written: [], occurredAt: new Date().toISOString() };
  }

  /** Inserts the events after revision `after`, each added to `outcome.written` once inserted. */
  private insertAll(streamId: string, events: AppendRequest['events'], texts: SerializedEvent[], after: number | null, outcome: AppendOutcome): AppendOutcome {
    let revision = after ?? -1;
    events.forEach((event, i) => {
      revision += 1;
      const { data, metadata, canonical } = texts[i];
      const { lastInsertRowid } = this.insertEvent.run(event.id, streamId, revision, event.type, data, metadata, outcome.occurredAt, canonical ? 1 : null);
      outcome.written.push([Number(lastInsertRowid), revision]);
    });
    const [position] = outcome.written[outcome.written.length - 1];
    outcome.result = { nextRevision: revision, position: String(position) };
    return outcome;
  }
}

/** The rows an outcome wrote, from the request's own texts (nothing of them crosses back from a writer thread). */
export function writtenRows(request: AppendRequest, outcome: AppendOutcome): EventRow[] {
  return outcome.written.map(([position, revision], i) => ({
    position,
    event_id: request.events[i].id,
    stream_id: request.streamId,
    revision,
    type: request.events[i].type,
    data: request.texts[i].data,
    metadata: request.texts[i].metadata,
    occurred_at: outcome.occurredAt,
  }));
}

/** Where appends are committed: on the store's connection, or in a thread of its own. */
export interface Appender {
  append(request: AppendRequest): Promise<AppendOutcome>;
  /** Commits what is handed over and waits for it (before the store closes). */
  close(): Promise<void>;
}

/** On the store's own connection: the appends of one turn of the event loop share one commit. */
export class InThreadAppender implements Appender {
  private readonly appends: SqliteAppends;
  private readonly group: GroupCommit;

  constructor(db: Database.Database) {
    this.appends = new SqliteAppends(db);
    this.group = new GroupCommit(db);
  }

  append(request: AppendRequest): Promise<AppendOutcome> {
    return this.group.write(() => this.appends.append(request));
  }

  async close(): Promise<void> {
    this.group.flush();
  }
}

/** A refusal as it crosses from the writer thread: which error, and what it carries. */
export type AppendFailure =
  | { kind: 'wrong-revision'; streamId: string; expected: ExpectedRevision; actual: number | 'no_stream' }
  | { kind: 'duplicate'; streamId: string; eventIds: string[] }
  | { kind: 'error'; message: string; code?: string };

export function appendFailure(error: unknown): AppendFailure {
  if (error instanceof WrongExpectedRevisionError) return { kind: 'wrong-revision', streamId: error.streamId, expected: error.expected, actual: error.actual };
  if (error instanceof DuplicateEventIdError) return { kind: 'duplicate', streamId: error.streamId, eventIds: error.eventIds };
  const { message, code } = (error ?? {}) as { message?: unknown; code?: unknown };
  return { kind: 'error', message: String(message ?? error), ...(typeof code === 'string' ? { code } : {}) };
}

export function failureError(failure: AppendFailure): Error {
  switch (failure.kind) {
    case 'wrong-revision':
      return new WrongExpectedRevisionError(failure.streamId, failure.expected, failure.actual);
    case 'duplicate':
      return new DuplicateEventIdError(failure.streamId, failure.eventIds);
    default:
      return Object.assign(new Error(failure.message), failure.code === undefined ? {} : { code: failure.code });
  }
}

/** A batch to the writer thread, and its answer: one outcome or failure per append, in order. */
export type AppendBatch = { id: number; requests: AppendRequest[] };
export type AppendAnswer = { id: number; outcomes: Array<{ ok: true; outcome: AppendOutcome } | { ok: false; failure: AppendFailure }> };

/**
 * In a writer thread of its own, with its own connection to the file: the appends of one turn of
 * the event loop cross to it in one message and are committed there in one transaction (each in a
 * savepoint, as on the store's connection), fsync included, and answered in one message. The
 * caller's thread neither runs the inserts nor waits for the disk.
 */
export class AppendThread implements Appender {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Array<{ resolve(outcome: AppendOutcome): void; reject(error: Error): void }>>();
  /** The appends of one turn, handed over together. */
  private readonly outbox = new PerTurn<{ request: AppendRequest; resolve(outcome: AppendOutcome): void; reject(error: Error): void }>((batch) =>
    this.send(batch),
  );
  private sent = 0;
  private failure: Error | null = null;
  private exited = false;
  /** Called once nothing handed over waits for its answer (see close). */
  private drained: (() => void) | null = null;

  constructor(private readonly file: string) {}

  /** Started at the first append: a store that only reads (an export, most of the ops CLI) starts no thread. */
  private started(): Worker {
    if (this.worker) return this.worker;
    // What it holds is one batch at a time: a small young generation keeps its memory small.
    const worker = startWorkerBeside(__filename, 'sqlite-append.worker', { file: this.file }, undefined, { maxYoungGenerationSizeMb: 4 });
    worker.on('message', (answer: AppendAnswer) => {
      const waiting = this.waiting.get(answer.id) ?? [];
      this.waiting.delete(answer.id);
      answer.outcomes.forEach((outcome, i) => (outcome.ok ? waiting[i].resolve(outcome.outcome) : waiting[i].reject(failureError(outcome.failure))));
      this.settled();
    });
    const fail = (error: Error) => {
      this.failure ??= new Error(`the event store's writer thread failed: ${error.message}`);
      for (const waiting of this.waiting.values()) for (const append of waiting) append.reject(this.failure);
      this.waiting.clear();
      this.settled();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      this.exited = true;
      fail(new Error(`it exited (code ${code})`));
    });
    this.worker = worker;
    return worker;
  }

  append(request: AppendRequest): Promise<AppendOutcome> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.outbox.add({ request, resolve, reject }));
  }

  private send(batch: Array<{ request: AppendRequest; resolve(outcome: AppendOutcome): void; reject(error: Error): void }>): void {
    if (this.failure) {
      for (const append of batch) append.reject(this.failure);
      return;
    }
    const id = this.sent++;
    this.waiting.set(id, batch);
    const worker = this.started();
    // Kept alive while appends are under way: a process does not exit with one unanswered.
    worker.ref();
    worker.postMessage({ id, requests: batch.map(({ request }) => request) } satisfies AppendBatch);
  }

  private settled(): void {
    if (this.waiting.size > 0) return;
    this.worker?.unref();
    this.drained?.();
    this.drained = null;
  }

  async close(): Promise<void> {
    // What was handed over is committed, not dropped; then the thread closes its connection.
    this.outbox.flush();
    if (this.waiting.size > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    const worker = this.worker;
    if (!worker || this.exited) return;
    const exit = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Until it has exited: an unreferenced thread would let the process end with close() unanswered.
    worker.ref();
    worker.postMessage('close');
    await exit;
  }
}
