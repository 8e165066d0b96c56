import Database from 'better-sqlite3';
import { GroupCommit, openWal } from '@campaign-ops/sqlite-wal';
import { BusHeaders } from './bus.port';
import { NOT_ACKED_ON_LAST_DELIVERY } from './parking';
import { subjectMatches } from './subjects';

/** A delivery handed to one consumer instance; `deliveryCount` also fences late settlements. */
export interface ClaimedDelivery {
  seq: number;
  subject: string;
  /** JSON text, parsed afresh for every delivery. */
  data: string;
  headers: BusHeaders;
  deliveryCount: number;
}

export interface ParkedDelivery {
  seq: number;
  subject: string;
  deliveryCount: number;
  reason: string;
}

/** A parked row with its message, as `listParked` reads it. */
export interface ParkedRow {
  durable: string;
  seq: number;
  subject: string;
  /** JSON text. */
  data: string;
  headers: BusHeaders;
  deliveryCount: number;
  /** Epoch ms. */
  parkedAt: number;
  reason: string;
}

export interface ClaimResult {
  /** Oldest first, at most the number asked for. */
  claimed: ClaimedDelivery[];
  /** Deliveries whose lease ran out after their last allowed delivery, parked on the way. */
  parked: ParkedDelivery[];
}

interface DeliveryRow {
  seq: number;
  delivery_count: number;
  subject: string;
  data: string;
  headers: string;
}

const SCAN_BATCH = 500;
// Messages deleted per statement by purge: each batch is its own short write, so consumers (in this
// process or another one on the file) are not held up by a large first purge.
const PURGE_BATCH = 1000;

/**
 * How long a message is kept at least, whoever is done with it: its msgId de-duplicates publishes
 * for this long (NATS keeps ids for its de-duplication window, 2 minutes by default).
 */
export const MESSAGE_RETENTION_MS = 24 * 60 * 60_000;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS bus_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    subject TEXT NOT NULL,
    msg_id TEXT UNIQUE,
    data TEXT NOT NULL,
    headers TEXT NOT NULL,
    published_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS bus_consumers (
    durable TEXT PRIMARY KEY,
    filter TEXT NOT NULL,
    cursor INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS bus_deliveries (
    durable TEXT NOT NULL,
    seq INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    delivery_count INTEGER NOT NULL,
    parked INTEGER NOT NULL DEFAULT 0,
    -- set with parked = 1: when (epoch ms) and why
    parked_at INTEGER,
    reason TEXT,
    -- 1 while a handler holds it (due_at is the end of the lease), 0 when waiting or retrying later
    leased INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (durable, seq)
  );
`;

const INSERT_MESSAGE_SQL = 'INSERT INTO bus_messages (subject, msg_id, data, headers, published_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (msg_id) DO NOTHING';

// Columns added after the first files were written: added in place to a file that lacks them.
const ADDED_DELIVERY_COLUMNS: Array<[name: string, definition: string]> = [
  ['parked_at', 'INTEGER'],
  ['reason', 'TEXT'],
];

// Created once the added columns surely exist.
const INDEXES = `
  CREATE INDEX IF NOT EXISTS bus_deliveries_parked ON bus_deliveries (parked_at, seq) WHERE parked = 1;
  -- purge asks, per message, whether any durable still has a delivery of it
  CREATE INDEX IF NOT EXISTS bus_deliveries_seq ON bus_deliveries (seq);
`;

/** What a parked row without a recorded reason (parked before reasons were kept) shows. */
const UNKNOWN_REASON = 'unknown (parked before reasons were recorded)';

/**
 * The durable half of the in-process bus, on SQLite.
 *
 * `bus_messages` is the stream. Each durable consumer has a cursor (last message moved into its
 * queue) and rows in `bus_deliveries`: one per message not yet acked. Claiming a delivery sets
 * `due_at` to now + ackWait, a lease: if the process dies mid-handler, the lease runs out and any
 * instance (this process after a restart, or another one on the same file) claims it again.
 * Every multi-statement step runs in an IMMEDIATE transaction, so processes sharing the file never
 * claim the same delivery twice.
 *
 * `purge` removes the messages every durable is done with once they are older than
 * MESSAGE_RETENTION_MS (24 h): the in-process counterpart of a JetStream stream's limits.
 */
export class SqliteBusStore {
  private readonly db: Database.Database;
  /** A second connection, FULL, used only to store published messages (see the constructor). */
  private readonly publisher: Database.Database;
  private readonly insertMessage: Database.Statement<[string, string | null, string, string, number]>;
  /** Publishes made in one turn of the event loop share one transaction and its fsync. */
  private readonly publishes: GroupCommit;
  private readonly statements: Statements;
  private readonly claimTransaction: Database.Transaction<SqliteBusStore['claimInTransaction']>;
  /** Acks made in one turn of the event loop share one transaction (on the NORMAL connection). */
  private readonly acks: GroupCommit;

  constructor(file: string) {
    // WAL: readers do not block the writer, and a crash never corrupts the file. `synchronous` is
    // per connection: a publish that resolved must survive a power loss (its relay may already have
    // moved its checkpoint past it), so messages are stored through a FULL connection; claims, acks
    // and retries go through this NORMAL one, where losing the last ones to a power cut only means
    // a redelivery, which at-least-once consumers take in their stride. Half the fsyncs, no loss.
    this.db = openWal(file);
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.addMissingColumns();
    this.db.exec(INDEXES);
    this.statements = prepareStatements(this.db);
    this.claimTransaction = this.db.transaction(this.claimInTransaction.bind(this));
    this.acks = new GroupCommit(this.db);
    // `:memory:` is private to its connection: there, one connection does everything.
    this.publisher = file === ':memory:' ? this.db : openWal(file);
    if (this.publisher !== this.db) {
      this.publisher.pragma('synchronous = FULL');
    }
    this.insertMessage = this.publisher.prepare(INSERT_MESSAGE_SQL);
    this.publishes = new GroupCommit(this.publisher);
  }

  /**
   * Stores a message unless one with the same `msgId` is still stored: for at least
   * MESSAGE_RETENTION_MS (24 h), after which `purge` may have removed it, and its id with it.
   * Resolves once the message is durable. Group commit: the publishes of one turn of the event
   * loop are stored in one transaction, in the order they were made, and share its fsync.
   */
  append(subject: string, data: string, headers: BusHeaders, msgId: string | undefined): Promise<void> {
    const publishedAt = Date.now();
    return this.publishes.write(() => void this.insertMessage.run(subject, msgId ?? null, data, JSON.stringify(headers), publishedAt));
  }

  /** A new durable starts at the beginning of the stream, like a JetStream consumer with DeliverPolicy.All. */
  registerConsumer(durable: string, filter: string): void {
    this.statements.upsertConsumer.run(durable, filter);
  }

  /**
   * Queues new matching messages for the durable, then leases up to `max` of its due deliveries,
   * oldest first: one transaction for the lot.
   */
  claim(durable: string, filter: string, ackWaitMs: number, maxDeliver: number, max = 1): ClaimResult {
    // Nothing published past the durable's cursor and nothing of its due: answered by two reads,
    // without the write lock and a commit (an idle consumer's poll). What comes meanwhile is the next claim's.
    const cursor = this.statements.cursor.get(durable)?.cursor ?? 0;
    if (!this.statements.anyAfter.get(cursor) && !this.statements.anyDue.get(durable, Date.now())) return { claimed: [], parked: [] };
    return this.claimTransaction.immediate(durable, filter, ackWaitMs, maxDeliver, max);
  }

  /**
   * Gives back a delivery claimed but never handed to a handler (its consumer stopped first): due
   * now, its delivery count as before the claim. Ignored if it was settled or claimed again meanwhile.
   */
  unclaim(durable: string, delivery: ClaimedDelivery): void {
    this.statements.unclaim.run(durable, delivery.seq, delivery.deliveryCount);
  }

  /** Changes whenever another connection (another process, or this store's publisher) commits to the file. */
  dataVersion(): number {
    return this.statements.dataVersion.get() as number;
  }

  /** When the durable's earliest pending delivery falls due (epoch ms), or undefined if none is pending. */
  nextDueAt(durable: string): number | undefined {
    return this.statements.nextDueAt.get(durable)?.dueAt ?? undefined;
  }

  /**
   * Done with the message. Applies even to a delivery whose lease another instance took over: it
   * was handled. Resolves once committed: the acks of one turn of the event loop share a commit.
   */
  ack(durable: string, seq: number): Promise<void> {
    return this.acks.write(() => void this.statements.remove.run(durable, seq));
  }

  /** Its handler still runs: the lease ends at `dueAt` now. Ignored if the delivery was settled or claimed again meanwhile. */
  renewLease(durable: string, delivery: ClaimedDelivery, dueAt: number): void {
    this.statements.renewLease.run(dueAt, durable, delivery.seq, delivery.deliveryCount);
  }

  /** Redeliver at `dueAt`; ignored if the delivery was claimed again meanwhile (its lease had run out). */
  retryAt(durable: string, delivery: ClaimedDelivery, dueAt: number): void {
    this.statements.reschedule.run(dueAt, durable, delivery.seq, delivery.deliveryCount);
  }

  /**
   * Stop delivering: the row stays, listed by `listParked`. Same fencing as `retryAt`; a delivery
   * already parked keeps its first reason. False if nothing was parked.
   */
  park(durable: string, delivery: ClaimedDelivery, reason: string): boolean {
    return this.statements.park.run(Date.now(), reason, durable, delivery.seq, delivery.deliveryCount).changes > 0;
  }

  /** Parked rows, oldest parking first. */
  listParked(durable: string | undefined, limit: number): ParkedRow[] {
    const rows = durable === undefined ? this.statements.parkedRows.all(limit) : this.statements.parkedRowsOf.all(durable, limit);
    return rows.map((row) => ({
      durable: row.durable,
      seq: row.seq,
      subject: row.subject,
      data: row.data,
      headers: JSON.parse(row.headers) as BusHeaders,
      deliveryCount: row.delivery_count,
      parkedAt: row.parked_at,
      reason: row.reason ?? UNKNOWN_REASON,
    }));
  }

  /**
   * Makes a parked delivery due now with its delivery count starting over, as if just queued.
   * False if the durable has no such parked delivery.
   */
  replay(durable: string, seq: number): boolean {
    return this.statements.replay.run(Date.now(), durable, seq).changes > 0;
  }

  /**
   * Ends every lease at once. Only for the single process that owns the file, at start: any lease
   * then belongs to a previous run that died, so there is no point waiting for it to run out.
   */
  releaseAllLeases(): number {
    return this.statements.releaseLeases.run().changes;
  }

  /**
   * Deletes the messages no durable needs any more and returns how many: those every registered
   * durable's cursor has passed (each has queued them, or skipped them as not matching), that no
   * row of `bus_deliveries` refers to (not pending, leased or parked for anyone), and that were
   * published more than MESSAGE_RETENTION_MS before `now` (so their msgId still de-duplicates for
   * that long). Sequences are never reused (AUTOINCREMENT), so cursors stay valid.
   *
   * Without any registered durable nothing is deleted. A durable registered later starts at the
   * oldest message still stored, not at the first ever published (like a JetStream consumer on a
   * stream with limits); a durable that is registered but never consumes again holds every
   * message after its cursor. `maxRows` bounds one call (the bus purges in slices, see InProcessBus).
   */
  purge(now: number = Date.now(), maxRows: number = Infinity): number {
    const publishedBefore = now - MESSAGE_RETENTION_MS;
    let deleted = 0;
    while (deleted < maxRows) {
      const batch = Math.min(PURGE_BATCH, maxRows - deleted);
      const { changes } = this.statements.purgeBatch.run(publishedBefore, batch);
      deleted += changes;
      if (changes < batch) break;
    }
    return deleted;
  }

  /** Unacked deliveries of the durable plus matching messages not yet queued for it. */
  pending(durable: string): number {
    const consumer = this.statements.consumer.get(durable);
    if (!consumer) return 0;
    const queued = this.statements.countDeliveries.get(durable)?.n ?? 0;
    let beyond = 0;
    for (const message of this.statements.subjectsAfter.iterate(consumer.cursor)) if (subjectMatches(consumer.filter, message.subject)) beyond++;
    return queued + beyond;
  }

  close(): void {
    // Publishes and acks already made are stored, not dropped.
    if (this.publisher.open) this.publishes.flush();
    if (this.db.open) this.acks.flush();
    if (this.publisher !== this.db) this.publisher.close();
    this.db.close();
  }

  private claimInTransaction(durable: string, filter: string, ackWaitMs: number, maxDeliver: number, max: number): ClaimResult {
    this.enqueueNewMessages(durable, filter);
    const parked: ParkedDelivery[] = [];
    const claimed: ClaimedDelivery[] = [];
    const now = Date.now();
    // Parked and leased rows are no longer due, so each round sees only rows not looked at yet.
    while (claimed.length < max) {
      const wanted = max - claimed.length;
      const rows = this.statements.firstDue.all(durable, now, wanted);
      for (const row of rows) {
        if (row.delivery_count >= maxDeliver) {
          // Its lease ran out on the last allowed delivery: the handler hung, or its process died.
          this.statements.park.run(now, NOT_ACKED_ON_LAST_DELIVERY, durable, row.seq, row.delivery_count);
          parked.push({ seq: row.seq, subject: row.subject, deliveryCount: row.delivery_count, reason: NOT_ACKED_ON_LAST_DELIVERY });
          continue;
        }
        this.statements.lease.run(now + ackWaitMs, durable, row.seq);
        claimed.push({
          seq: row.seq,
          subject: row.subject,
          data: row.data,
          headers: JSON.parse(row.headers) as BusHeaders,
          deliveryCount: row.delivery_count + 1,
        });
      }
      if (rows.length < wanted) break;
    }
    return { claimed, parked };
  }

  /**
   * Files written before `parked_at` and `reason` existed get them here. In an IMMEDIATE
   * transaction, so two processes opening such a file together do not both add them.
   */
  private addMissingColumns(): void {
    this.db
      .transaction(() => {
        const existing = new Set((this.db.pragma('table_info(bus_deliveries)') as Array<{ name: string }>).map((column) => column.name));
        for (const [name, definition] of ADDED_DELIVERY_COLUMNS) {
          if (!existing.has(name)) this.db.exec(`ALTER TABLE bus_deliveries ADD COLUMN ${name} ${definition}`);
        }
      })
      .immediate();
  }

  private enqueueNewMessages(durable: string, filter: string): void {
    let cursor = this.statements.cursor.get(durable)?.cursor ?? 0;
    for (;;) {
      const batch = this.statements.messagesAfter.all(cursor, SCAN_BATCH);
      if (batch.length === 0) return;
      for (const message of batch) {
        if (subjectMatches(filter, message.subject)) this.statements.enqueue.run(durable, message.seq);
      }
      cursor = batch[batch.length - 1].seq;
      this.statements.moveCursor.run(cursor, durable);
    }
  }
}

type Statements = ReturnType<typeof prepareStatements>;

interface ParkedRowRecord {
  durable: string;
  seq: number;
  subject: string;
  data: string;
  headers: string;
  delivery_count: number;
  parked_at: number;
  reason: string | null;
}

// Rows parked before parked_at existed sort (and show) as parked when their message was published.
const SELECT_PARKED = `
  SELECT d.durable, d.seq, m.subject, m.data, m.headers, d.delivery_count,
         COALESCE(d.parked_at, m.published_at) AS parked_at, d.reason
  FROM bus_deliveries d JOIN bus_messages m ON m.seq = d.seq
  WHERE d.parked = 1`;

function prepareStatements(db: Database.Database) {
  return {
    upsertConsumer: db.prepare<[string, string]>(
      'INSERT INTO bus_consumers (durable, filter, cursor) VALUES (?, ?, 0) ON CONFLICT (durable) DO UPDATE SET filter = excluded.filter',
    ),
    cursor: db.prepare<[string], { cursor: number }>('SELECT cursor FROM bus_consumers WHERE durable = ?'),
    messagesAfter: db.prepare<[number, number], { seq: number; subject: string }>('SELECT seq, subject FROM bus_messages WHERE seq > ? ORDER BY seq LIMIT ?'),
    dataVersion: db.prepare('PRAGMA data_version').pluck(),
    anyAfter: db.prepare<[number], { found: 1 }>('SELECT 1 AS found FROM bus_messages WHERE seq > ? LIMIT 1'),
    anyDue: db.prepare<[string, number], { found: 1 }>('SELECT 1 AS found FROM bus_deliveries WHERE durable = ? AND parked = 0 AND due_at <= ? LIMIT 1'),
    moveCursor: db.prepare<[number, string]>('UPDATE bus_consumers SET cursor = ? WHERE durable = ?'),
    enqueue: db.prepare<[string, number]>('INSERT OR IGNORE INTO bus_deliveries (durable, seq, due_at, delivery_count) VALUES (?, ?, 0, 0)'),
    firstDue: db.prepare<[string, number, number], DeliveryRow>(
      `SELECT d.seq, d.delivery_count, m.subject, m.data, m.headers
       FROM bus_deliveries d JOIN bus_messages m ON m.seq = d.seq
       WHERE d.durable = ? AND d.parked = 0 AND d.due_at <= ?
       ORDER BY d.seq LIMIT ?`,
    ),
    lease: db.prepare<[number, string, number]>(
      'UPDATE bus_deliveries SET due_at = ?, delivery_count = delivery_count + 1, leased = 1 WHERE durable = ? AND seq = ?',
    ),
    nextDueAt: db.prepare<[string], { dueAt: number | null }>('SELECT MIN(due_at) AS dueAt FROM bus_deliveries WHERE durable = ? AND parked = 0'),
    consumer: db.prepare<[string], { cursor: number; filter: string }>('SELECT cursor, filter FROM bus_consumers WHERE durable = ?'),
    countDeliveries: db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM bus_deliveries WHERE durable = ? AND parked = 0'),
    subjectsAfter: db.prepare<[number], { subject: string }>('SELECT subject FROM bus_messages WHERE seq > ?'),
    remove: db.prepare<[string, number]>('DELETE FROM bus_deliveries WHERE durable = ? AND seq = ?'),
    reschedule: db.prepare<[number, string, number, number]>(
      'UPDATE bus_deliveries SET due_at = ?, leased = 0 WHERE durable = ? AND seq = ? AND delivery_count = ?',
    ),
    renewLease: db.prepare<[number, string, number, number]>(
      'UPDATE bus_deliveries SET due_at = ? WHERE durable = ? AND seq = ? AND delivery_count = ? AND leased = 1 AND parked = 0',
    ),
    unclaim: db.prepare<[string, number, number]>(
      'UPDATE bus_deliveries SET due_at = 0, leased = 0, delivery_count = delivery_count - 1 WHERE durable = ? AND seq = ? AND delivery_count = ? AND leased = 1 AND parked = 0',
    ),
    releaseLeases: db.prepare<[]>('UPDATE bus_deliveries SET due_at = 0, leased = 0 WHERE leased = 1 AND parked = 0'),
    park: db.prepare<[number, string, string, number, number]>(
      'UPDATE bus_deliveries SET parked = 1, leased = 0, parked_at = ?, reason = ? WHERE durable = ? AND seq = ? AND delivery_count = ? AND parked = 0',
    ),
    parkedRows: db.prepare<[number], ParkedRowRecord>(`${SELECT_PARKED} ORDER BY parked_at, d.seq LIMIT ?`),
    parkedRowsOf: db.prepare<[string, number], ParkedRowRecord>(`${SELECT_PARKED} AND d.durable = ? ORDER BY parked_at, d.seq LIMIT ?`),
    // One statement: it sees the cursors and deliveries of one moment (a claim moves a cursor and
    // queues the deliveries in one transaction), so a message cannot pass between the two checks.
    purgeBatch: db.prepare<[number, number]>(
      `DELETE FROM bus_messages WHERE seq IN (
         SELECT m.seq FROM bus_messages m
         WHERE m.seq <= (SELECT COALESCE(MIN(cursor), 0) FROM bus_consumers)
           AND m.published_at < ?
           AND NOT EXISTS (SELECT 1 FROM bus_deliveries d WHERE d.seq = m.seq)
         ORDER BY m.seq LIMIT ?)`,
    ),
    replay: db.prepare<[number, string, number]>(
      `UPDATE bus_deliveries SET parked = 0, leased = 0, due_at = ?, delivery_count = 0, parked_at = NULL, reason = NULL
       WHERE durable = ? AND seq = ? AND parked = 1`,
    ),
  };
}
