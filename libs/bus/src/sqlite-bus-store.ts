import Database from 'better-sqlite3';
import { BusHeaders } from './bus.port';
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
}

export interface ClaimResult {
  claimed?: ClaimedDelivery;
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
    -- 1 while a handler holds it (due_at is the end of the lease), 0 when waiting or retrying later
    leased INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (durable, seq)
  );
`;

/**
 * The durable half of the in-process bus, on SQLite.
 *
 * `bus_messages` is the stream. Each durable consumer has a cursor (last message moved into its
 * queue) and rows in `bus_deliveries`: one per message not yet acked. Claiming a delivery sets
 * `due_at` to now + ackWait, a lease: if the process dies mid-handler, the lease runs out and any
 * instance (this process after a restart, or another one on the same file) claims it again.
 * Every multi-statement step runs in an IMMEDIATE transaction, so processes sharing the file never
 * claim the same delivery twice.
 */
export class SqliteBusStore {
  private readonly db: Database.Database;
  private readonly statements: Statements;
  private readonly claimTransaction: Database.Transaction<SqliteBusStore['claimInTransaction']>;

  constructor(file: string) {
    this.db = new Database(file);
    // WAL: readers do not block the writer, and a crash never corrupts the file. `synchronous`
    // stays at SQLite's default (FULL), so a publish that resolved survives a power loss too.
    this.db.pragma('journal_mode = WAL');
    this.db.exec(SCHEMA);
    this.statements = prepareStatements(this.db);
    this.claimTransaction = this.db.transaction(this.claimInTransaction.bind(this));
  }

  /** Stores a message unless one with the same `msgId` was ever stored (de-duplication without a window). */
  append(subject: string, data: string, headers: BusHeaders, msgId: string | undefined): void {
    this.statements.insertMessage.run(subject, msgId ?? null, data, JSON.stringify(headers), Date.now());
  }

  /** A new durable starts at the beginning of the stream, like a JetStream consumer with DeliverPolicy.All. */
  registerConsumer(durable: string, filter: string): void {
    this.statements.upsertConsumer.run(durable, filter);
  }

  /** Queues new matching messages for the durable, then leases its first due delivery, if any. */
  claim(durable: string, filter: string, ackWaitMs: number, maxDeliver: number): ClaimResult {
    return this.claimTransaction.immediate(durable, filter, ackWaitMs, maxDeliver);
  }

  /** When the durable's earliest pending delivery falls due (epoch ms), or undefined if none is pending. */
  nextDueAt(durable: string): number | undefined {
    return this.statements.nextDueAt.get(durable)?.dueAt ?? undefined;
  }

  /** Done with the message. Applies even to a delivery whose lease another instance took over: it was handled. */
  ack(durable: string, seq: number): void {
    this.statements.remove.run(durable, seq);
  }

  /** Redeliver at `dueAt`; ignored if the delivery was claimed again meanwhile (its lease had run out). */
  retryAt(durable: string, delivery: ClaimedDelivery, dueAt: number): void {
    this.statements.reschedule.run(dueAt, durable, delivery.seq, delivery.deliveryCount);
  }

  /** Stop delivering: the row stays for inspection. Same fencing as `retryAt`. */
  park(durable: string, delivery: ClaimedDelivery): void {
    this.statements.park.run(durable, delivery.seq, delivery.deliveryCount);
  }

  /**
   * Ends every lease at once. Only for the single process that owns the file, at start: any lease
   * then belongs to a previous run that died, so there is no point waiting for it to run out.
   */
  releaseAllLeases(): number {
    return this.statements.releaseLeases.run().changes;
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
    this.db.close();
  }

  private claimInTransaction(durable: string, filter: string, ackWaitMs: number, maxDeliver: number): ClaimResult {
    this.enqueueNewMessages(durable, filter);
    const parked: ParkedDelivery[] = [];
    const now = Date.now();
    for (;;) {
      const row = this.statements.firstDue.get(durable, now);
      if (!row) return { parked };
      if (row.delivery_count >= maxDeliver) {
        this.statements.park.run(durable, row.seq, row.delivery_count);
        parked.push({ seq: row.seq, subject: row.subject, deliveryCount: row.delivery_count });
        continue;
      }
      this.statements.lease.run(now + ackWaitMs, durable, row.seq);
      const claimed: ClaimedDelivery = {
        seq: row.seq,
        subject: row.subject,
        data: row.data,
        headers: JSON.parse(row.headers) as BusHeaders,
        deliveryCount: row.delivery_count + 1,
      };
      return { claimed, parked };
    }
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

function prepareStatements(db: Database.Database) {
  return {
    insertMessage: db.prepare<[string, string | null, string, string, number]>(
      'INSERT INTO bus_messages (subject, msg_id, data, headers, published_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (msg_id) DO NOTHING',
    ),
    upsertConsumer: db.prepare<[string, string]>(
      'INSERT INTO bus_consumers (durable, filter, cursor) VALUES (?, ?, 0) ON CONFLICT (durable) DO UPDATE SET filter = excluded.filter',
    ),
    cursor: db.prepare<[string], { cursor: number }>('SELECT cursor FROM bus_consumers WHERE durable = ?'),
    messagesAfter: db.prepare<[number, number], { seq: number; subject: string }>(
      'SELECT seq, subject FROM bus_messages WHERE seq > ? ORDER BY seq LIMIT ?',
    ),
    moveCursor: db.prepare<[number, string]>('UPDATE bus_consumers SET cursor = ? WHERE durable = ?'),
    enqueue: db.prepare<[string, number]>(
      'INSERT OR IGNORE INTO bus_deliveries (durable, seq, due_at, delivery_count) VALUES (?, ?, 0, 0)',
    ),
    firstDue: db.prepare<[string, number], DeliveryRow>(
      `SELECT d.seq, d.delivery_count, m.subject, m.data, m.headers
       FROM bus_deliveries d JOIN bus_messages m ON m.seq = d.seq
       WHERE d.durable = ? AND d.parked = 0 AND d.due_at <= ?
       ORDER BY d.seq LIMIT 1`,
    ),
    lease: db.prepare<[number, string, number]>(
      'UPDATE bus_deliveries SET due_at = ?, delivery_count = delivery_count + 1, leased = 1 WHERE durable = ? AND seq = ?',
    ),
    nextDueAt: db.prepare<[string], { dueAt: number | null }>(
      'SELECT MIN(due_at) AS dueAt FROM bus_deliveries WHERE durable = ? AND parked = 0',
    ),
    consumer: db.prepare<[string], { cursor: number; filter: string }>('SELECT cursor, filter FROM bus_consumers WHERE durable = ?'),
    countDeliveries: db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM bus_deliveries WHERE durable = ? AND parked = 0'),
    subjectsAfter: db.prepare<[number], { subject: string }>('SELECT subject FROM bus_messages WHERE seq > ?'),
    remove: db.prepare<[string, number]>('DELETE FROM bus_deliveries WHERE durable = ? AND seq = ?'),
    reschedule: db.prepare<[number, string, number, number]>(
      'UPDATE bus_deliveries SET due_at = ?, leased = 0 WHERE durable = ? AND seq = ? AND delivery_count = ?',
    ),
    releaseLeases: db.prepare<[]>('UPDATE bus_deliveries SET due_at = 0, leased = 0 WHERE leased = 1 AND parked = 0'),
    park: db.prepare<[string, number, number]>(
      'UPDATE bus_deliveries SET parked = 1 WHERE durable = ? AND seq = ? AND delivery_count = ?',
    ),
  };
}
