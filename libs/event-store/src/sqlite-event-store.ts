// The embedded event store on SQLite: appends, reads, exports and replays, subscriptions.
// The table and row conversions are in sqlite-event-rows.ts, the subscription loop in
// sqlite-subscription.ts.
import Database from 'better-sqlite3';
import canonicalize from 'canonicalize';
import { openWal } from '@campaign-ops/sqlite-wal';
import { Appender, AppendRequest, AppendThread, InThreadAppender, writtenRows } from './sqlite-appends';
import {
  assertReadAllOptions,
  AppendResult,
  EventStore,
  EventToAppend,
  ExpectedRevision,
  ReadAllOptions,
  CanonicalEvent,
  CanonicalReadOptions,
  ReplayReadOptions,
  ReadStreamOptions,
  RecordedEvent,
  ReplayedEvent,
  SubscribeToAllOptions,
  Subscription,
} from './event-store.port';
import {
  addCanonicalColumn,
  CANONICAL_READ_COLUMNS,
  EVENT_COLUMNS,
  EventRow,
  parsePosition,
  prefixFilter,
  prefixParameters,
  REPLAY_COLUMNS,
  SCHEMA,
  serializeEvent,
  toRecordedEvent,
  replayMetadata,
} from './sqlite-event-rows';
import { BatchReader, SqliteSubscription, streamFollowed, SUBSCRIPTION_BATCH_SIZE } from './sqlite-subscription';
import { RecentEvents } from './recent-events';

const DEFAULT_POLL_INTERVAL_MS = 1000;
/** Events of this store's latest appends held for its subscriptions (see RecentEvents): several seconds at full load. */
const RECENT_EVENTS = 4096;

export { DuplicateEventIdError } from './sqlite-appends';

/** The embedded event store: one SQLite file, shareable by several processes. */
export class SqliteEventStore implements EventStore {
  private readonly subscriptions = new Set<SqliteSubscription>();
  /** While there are subscriptions: one look at the file's head for them all, every pollIntervalMs. */
  private pollTimer: NodeJS.Timeout | null = null;
  private polledHead = 0;
  private closing = false;

  private readonly readForwardsQuery;
  private readonly readBackwardsQuery;
  private readonly headQuery;
  /** readAll's statements, by columns and prefixes (a handful: the export's and the rebuild's filters). */
  private readonly readAllQueries = new Map<string, Database.Statement<unknown[], unknown[]>>();
  /** Appends made in one turn of the event loop share one transaction and its fsync, on this connection or in a writer thread. */
  private readonly appends: Appender;
  private readonly recent = new RecentEvents(RECENT_EVENTS);
  /** Subscriptions to notify of this turn's appends, once the appenders have gone on (see notifyAfterAppenders). */
  private readonly toNotify = new Set<SqliteSubscription>();

  private constructor(
    /** The database file: what another connection (an export's reader threads) opens. */
    readonly file: string,
    private readonly db: Database.Database,
    private readonly pollIntervalMs: number,
    /** Its appends are committed by a writer thread of its own (see open). */
    readonly appendsInThread: boolean,
  ) {
    // A negative LIMIT means no limit in SQLite.
    this.readForwardsQuery = db.prepare<[string, number, number], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?`,
    );
    this.readBackwardsQuery = db.prepare<[string, number, number], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`,
    );
    this.headQuery = db.prepare<[], { head: number | null }>('SELECT MAX(position) AS head FROM events');
    this.appends = appendsInThread ? new AppendThread(file) : new InThreadAppender(db);
  }

  /**
   * `appendsInThread`: appends are committed by a writer thread of the store's own, with its own
   * connection (a file only: `:memory:` is one connection's), so that the caller's thread neither
   * runs the inserts nor waits for the disk (the standalone process; the four apps, the ops CLI and
   * tests append on the store's connection, and start no thread).
   */
  static open(file: string, options: { pollIntervalMs?: number; appendsInThread?: boolean } = {}): SqliteEventStore {
    const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    if (!(pollIntervalMs > 0)) throw new Error(`pollIntervalMs must be positive, got ${pollIntervalMs}`);
    // WAL: readers (subscriptions, other processes) never block the writer, nor it them.
    const db = openWal(file);
    try {
      // The source of truth: an acknowledged append must survive a power loss, not only a crash.
      db.pragma('synchronous = FULL');
      db.exec(SCHEMA);
      addCanonicalColumn(db);
      return new SqliteEventStore(file, db, pollIntervalMs, (options.appendsInThread ?? false) && file !== ':memory:');
    } catch (error) {
      db.close();
      throw error;
    }
  }

  async append(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    // An empty append has no last event whose revision and position the result could report.
    if (events.length === 0) throw new Error(`stream ${streamId}: append needs at least one event`);
    const ids = new Set(events.map((event) => event.id));
    if (ids.size !== events.length) throw new Error(`stream ${streamId}: the same event id appears twice in one append`);
    const expected = options.expectedRevision;
    if (typeof expected === 'number' && !(Number.isSafeInteger(expected) && expected >= 0)) {
      throw new Error(`stream ${streamId}: expected revision must be a non-negative integer, got ${expected}`);
    }

    // Group commit (synchronous = FULL makes each commit wait for the disk): each append keeps
    // its own expected-revision check, in the order the appends were made, in a savepoint of its
    // own, and is acknowledged only once the commit that holds it is durable. The group's
    // IMMEDIATE transaction takes the write lock before any revision is read, so no other process
    // can append between a check and its insert (see the comment on SCHEMA).
    // Serialized before the group's transaction, which holds the write lock while it runs.
    const texts = events.map(serializeEvent);
    const request: AppendRequest = { streamId, events: events.map(({ id, type }) => ({ id, type })), texts, expected };
    const outcome = await this.appends.append(request);
    if (outcome.written.length === 0) return outcome.result;
    // Committed: what the subscriptions read next (the appends of one commit come here in position order).
    this.recent.add(writtenRows(request, outcome));
    // Only the subscriptions this stream's events are for: the others would read a batch of none.
    // (They move their cursors past it at the next event of theirs, or at the poll's next look.)
    this.notifyAfterAppenders(streamId);
    return outcome.result;
  }

  /**
   * The subscriptions that follow the stream are told of the append on the next turn of the event
   * loop, not at once: the appender goes on first, and a command that writes its view inline after
   * appending (ChargedDispatches.make, CreditLedgers) has queued that write by then, so the
   * projection that gets the event waits for the view instead of reading the stream and writing it
   * too (the SQLite read store's revisionOf waits for an upsert under way).
   */
  private notifyAfterAppenders(streamId: string): void {
    const first = this.toNotify.size === 0;
    for (const subscription of this.subscriptions) if (subscription.follows(streamId)) this.toNotify.add(subscription);
    if (!first || this.toNotify.size === 0) return;
    setImmediate(() => {
      const notified = [...this.toNotify];
      this.toNotify.clear();
      for (const subscription of notified) subscription.notify();
    });
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const limit = options.maxCount ?? -1;
    const rows =
      options.direction === 'backwards'
        ? this.readBackwardsQuery.all(streamId, options.fromRevision ?? Number.MAX_SAFE_INTEGER, limit)
        : this.readForwardsQuery.all(streamId, options.fromRevision ?? 0, limit);
    return rows.map(toRecordedEvent);
  }

  subscribeToAll(options: SubscribeToAllOptions): Subscription {
    if (this.closing) throw new Error('the event store is closed');
    const subscription = new SqliteSubscription(
      {
        head: () => this.head(),
        readBatch: this.batchReader(options.streamPrefixes),
      },
      options,
      parsePosition(options.fromPosition),
      () => {
        this.subscriptions.delete(subscription);
        if (this.subscriptions.size === 0) this.stopPolling();
      },
    );
    this.subscriptions.add(subscription);
    this.startPolling();
    return subscription;
  }

  private head(): number {
    return this.headQuery.get()!.head ?? 0;
  }

  /**
   * Appends through this store notify the subscriptions of their stream at once; those of other processes on the
   * file (the ops CLI, another replica) are found here: one read of the head for every
   * subscription, which are all notified when it has moved. A subscription that misses nothing is
   * woken by nothing, so an idle process makes one cheap read per interval, whatever its number
   * of subscriptions.
   */
  private startPolling(): void {
    if (this.pollTimer) return;
    this.polledHead = this.head();
    this.pollTimer = setInterval(() => {
      try {
        const head = this.head();
        if (head === this.polledHead) return;
        this.polledHead = head;
      } catch {
        // E.g. SQLITE_BUSY past the busy timeout: the subscriptions look for themselves.
      }
      for (const subscription of this.subscriptions) subscription.notify();
    }, this.pollIntervalMs);
    // A store nobody closed does not keep the process alive for its poll.
    this.pollTimer.unref();
  }

  private stopPolling(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
  }

  async readAll(options: ReadAllOptions): Promise<RecordedEvent[]> {
    const rows = this.readAllRows(EVENT_COLUMNS, options) as Array<[number, string, string, number, string, string, string, string]>;
    return rows.map(([position, id, streamId, revision, type, data, metadata, occurredAt]) => ({
      id,
      streamId,
      type,
      revision,
      position: String(position),
      data: JSON.parse(data),
      metadata: JSON.parse(metadata),
      occurredAt,
    }));
  }

  /**
   * readAll less ids and times, and with metadata read as `{ version }` alone when its version is
   * a whole number (replayMetadata: mostly without parsing it); any other metadata (no version, a
   * version written as text) is parsed whole, as readAll does.
   */
  async readAllForReplay(options: ReplayReadOptions): Promise<ReplayedEvent[]> {
    const rows = this.readAllRows(REPLAY_COLUMNS, options) as Array<[number, string, number, string, string, string]>;
    return rows.map(([position, streamId, revision, type, data, metadata]) => ({
      streamId,
      type,
      revision,
      position: String(position),
      data: JSON.parse(data),
      metadata: replayMetadata(metadata),
    }));
  }

  /**
   * readAll, with data and metadata as their canonical text (JCS): for exports. Texts stored
   * canonical are passed through; any other is canonicalized here.
   */
  async readAllCanonical(options: CanonicalReadOptions): Promise<CanonicalEvent[]> {
    const rows = this.readAllRows(CANONICAL_READ_COLUMNS, options) as Array<[number, string, string, number, string, string, string, string, 1 | null]>;
    return rows.map(([position, id, streamId, revision, type, data, metadata, occurredAt, canonical]) => ({
      id,
      streamId,
      type,
      revision,
      position: String(position),
      data: canonical ? data : canonicalize(JSON.parse(data))!,
      metadata: canonical ? metadata : canonicalize(JSON.parse(metadata))!,
      occurredAt,
    }));
  }

  /** One page of readAll's rows, as arrays (a whole-store read spends a good part of its time making row objects). */
  private readAllRows(columns: string, options: CanonicalReadOptions & ReplayReadOptions): unknown[] {
    if (this.closing) throw new Error('the event store is closed');
    assertReadAllOptions(options);
    const { streamPrefixes: prefixes, share } = options;
    const key = `${columns}|${prefixes ? JSON.stringify(prefixes) : ''}|${share ? 'share' : ''}`;
    let query = this.readAllQueries.get(key);
    if (!query) {
      const shareFilter = share ? 'AND unicode(substr(stream_id, -1)) % ? = ?' : '';
      query = this.db
        .prepare<unknown[], unknown[]>(
          `SELECT ${columns} FROM events WHERE position > ? AND position <= ? ${prefixFilter(prefixes)} ${shareFilter} ORDER BY position LIMIT ?`,
        )
        .raw(true);
      if (this.readAllQueries.size >= 64) this.readAllQueries.clear();
      this.readAllQueries.set(key, query);
    }
    const upTo = options.toPosition === undefined ? Number.MAX_SAFE_INTEGER : parsePosition(options.toPosition);
    return query.all(parsePosition(options.fromPosition), upTo, ...prefixParameters(prefixes), ...(share ? [share.of, share.index] : []), options.maxCount);
  }

  async lastPosition(): Promise<string | null> {
    if (this.closing) throw new Error('the event store is closed');
    const head = this.headQuery.get()!.head;
    return head === null ? null : String(head);
  }

  /** Reads the next batch after a position, up to a head read beforehand (see SqliteSubscription.run). */
  private batchReader(prefixes: string[] | undefined): BatchReader {
    if (prefixes !== undefined && prefixes.length === 0) {
      // Matching nothing is surely not what was meant; receiving everything might be harmful.
      throw new Error('streamPrefixes must not be empty: omit it to receive the events of every stream');
    }
    const query = this.db.prepare<unknown[], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE position > ? AND position <= ? ${prefixFilter(prefixes)} ORDER BY position LIMIT ?`,
    );
    const parameters = prefixParameters(prefixes);
    const follows = (row: EventRow) => streamFollowed(prefixes, row.stream_id);
    return (after, upTo) => {
      // What this store just appended, as the query below would read it (the prefix filter matches
      // as SqliteSubscription.follows does); anything it does not hold entirely, from the file.
      const held = this.recent.between(after, upTo);
      const rows = held ? held.filter(follows).slice(0, SUBSCRIPTION_BATCH_SIZE) : query.all(after, upTo, ...parameters, SUBSCRIPTION_BATCH_SIZE);
      return rows.map(toRecordedEvent);
    };
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    this.closing = true;
    // Appends already made are written, not dropped.
    await this.appends.close();
    await Promise.all([...this.subscriptions].map((subscription) => subscription.close()));
    this.stopPolling();
    if (this.db.open) this.db.close();
  }
}
