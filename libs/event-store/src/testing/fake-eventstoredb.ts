import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { Any } from 'google-protobuf/google/protobuf/any_pb';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { AppendReq, AppendResp, BatchAppendReq, BatchAppendResp, ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb';
import { AllStreamPosition, Empty, StreamIdentifier, UUID, WrongExpectedVersion } from '@eventstore/db-client/generated/shared_pb';
import { Status } from '@eventstore/db-client/generated/status_pb';

/**
 * A fake EventStoreDB node for tests: the client's own generated Streams service
 * (`@eventstore/db-client/generated/streams_grpc_pb`) served by @grpc/grpc-js on 127.0.0.1, on an
 * ephemeral port, without TLS: connect with `esdb://127.0.0.1:<port>?tls=false`.
 *
 * What it serves, from an in-memory log: stream reads, `$all` reads (both directions), catch-up
 * subscriptions to `$all` (confirmation, the events after the start position, caught-up, then live
 * events; stream-prefix and event-type-regex filters) and appends. Appends come one of two ways,
 * as the client picks from the node's ServerFeatures: by default this node leaves ServerFeatures
 * unimplemented, as servers before 21.10 do, and the client uses the plain client-streaming
 * Append; started with `{ batchAppend: true }` it answers ServerFeatures with BatchAppend, as every
 * production server (22.10 and later) does, and the client sends every append over one
 * long-lived bidirectional BatchAppend call whose gRPC deadline it sets to Infinity. Single-host connection strings need
 * nothing else at connect: the client does not gossip unless given several hosts or
 * `esdb+discover`.
 *
 * What it can be told to do instead (see `behaviour`): hang (accept a call and never answer), fail
 * with any status and trailers, fail after confirming a subscription, refuse calls that require the
 * leader with EventStoreDB's not-leader exception (status NOT_FOUND, "Leader info available",
 * trailers `exception: not-leader`, `leader-endpoint-host`, `leader-endpoint-port`: what the
 * client turns into NotLeaderError), and refuse a subscription from a position that is not one of
 * its events with INVALID_ARGUMENT after confirming it (what a checkpoint from a recreated
 * database meets).
 *
 * Every call is recorded in `calls`, with whether the client cancelled it and whether it ended.
 */

/** How the node fails a call: a gRPC status, its details, and trailers. */
export interface FakeFailure {
  code: grpc.status;
  details: string;
  trailers?: Record<string, string>;
}

export type ReadBehaviour = 'serve' | 'hang' | FakeFailure;
export type SubscribeBehaviour = ReadBehaviour | 'confirm-then-hang' | { confirmThen: FakeFailure };

export interface FakeBehaviour {
  /** Stream and `$all` reads (not subscriptions). */
  read: ReadBehaviour;
  subscribe: SubscribeBehaviour;
  append: ReadBehaviour;
  /**
   * Set: this node is a follower of that leader. A call carrying `requires-leader: true` is
   * refused with NotLeader; others are served from this node's own (possibly stale) log.
   */
  followerOf?: { host: string; port: number };
  /** Set: appends this node accepts are written to that node's log (a follower forwards writes to its leader). */
  forwardAppendsTo?: FakeEventStoreDb;
}

export interface FakeCall {
  kind: 'read-stream' | 'read-all' | 'subscribe' | 'append' | 'batch-append';
  /** Stream name for stream reads and appends. */
  stream?: string;
  requiresLeader: boolean;
  cancelled: boolean;
  ended: boolean;
}

export interface FakeStoredEvent {
  streamId: string;
  id: string;
  type: string;
  revision: number;
  /** Commit and prepare position (equal in this fake). */
  position: bigint;
  data: Uint8Array;
  metadata: Uint8Array;
  contentType: string;
  createdMs: number;
}

export const notLeader = (host: string, port: number): FakeFailure => ({
  code: grpc.status.NOT_FOUND,
  details: 'Leader info available',
  trailers: { exception: 'not-leader', 'leader-endpoint-host': host, 'leader-endpoint-port': String(port) },
});

export const unavailable = (details = 'Server Is Not Ready'): FakeFailure => ({ code: grpc.status.UNAVAILABLE, details });

/** As EventStoreDB's RpcExceptions.InvalidArgument: no `exception` trailer, so the client reports an UnknownError. */
export const invalidPosition = (commit: bigint, prepare: bigint): FakeFailure => ({
  code: grpc.status.INVALID_ARGUMENT,
  details: `'C:${commit}/P:${prepare}' is not a valid EventStore.Core.Services.Transport.Common.Position`,
});

const TICKS_PER_MS = 10_000n;

type LiveSubscriber = (event: FakeStoredEvent) => void;

export class FakeEventStoreDb {
  readonly behaviour: FakeBehaviour = { read: 'serve', subscribe: 'serve', append: 'serve' };
  readonly calls: FakeCall[] = [];
  readonly log: FakeStoredEvent[] = [];
  private readonly live = new Set<LiveSubscriber>();
  /** Ends each live subscription with a failure. */
  private readonly droppers = new Set<(failure: FakeFailure) => void>();
  /** Calls left hanging or live, so stop() can end them. */
  private readonly open = new Set<grpc.ServerWritableStream<ReadReq, ReadResp>>();

  private readonly server = new grpc.Server();
  private boundPort = 0;

  private constructor() {}

  static async start(options: { batchAppend?: boolean } = {}): Promise<FakeEventStoreDb> {
    const fake = new FakeEventStoreDb();
    fake.server.addService(StreamsService as unknown as grpc.ServiceDefinition, {
      read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => fake.read(call),
      append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>) => fake.appendCall(call, callback),
      batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => fake.batchAppendCall(call),
    });
    if (options.batchAppend) {
      fake.server.addService(ServerFeaturesService as unknown as grpc.ServiceDefinition, {
        getSupportedMethods: (_call: unknown, callback: grpc.sendUnaryData<SupportedMethods>) =>
          callback(
            null,
            new SupportedMethods()
              .setEventStoreServerVersion('23.10.0')
              .setMethodsList([new SupportedMethod().setServiceName('event_store.client.streams.streams').setMethodName('batchappend')]),
          ),
      });
    }
    fake.boundPort = await new Promise<number>((resolve, reject) =>
      fake.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    return fake;
  }

  get port(): number {
    return this.boundPort;
  }

  get connectionString(): string {
    return `esdb://127.0.0.1:${this.port}?tls=false`;
  }

  /** Stream and subscription calls of a kind, in arrival order. */
  callsOf(kind: FakeCall['kind']): FakeCall[] {
    return this.calls.filter((call) => call.kind === kind);
  }

  /** Appends on the server side (as another writer would); live subscriptions see them. */
  write(streamId: string, events: Array<{ type: string; data?: Record<string, unknown>; metadata?: Record<string, unknown> }>): FakeStoredEvent[] {
    return events.map((event) =>
      this.store({
        streamId,
        id: randomUUID(),
        type: event.type,
        data: Buffer.from(JSON.stringify(event.data ?? {})),
        metadata: event.metadata ? Buffer.from(JSON.stringify(event.metadata)) : new Uint8Array(),
        contentType: 'application/json',
      }),
    );
  }

  /** Fails every live subscription (e.g. with `unavailable()`), as a node going away does. */
  dropSubscriptions(failure: FakeFailure): void {
    for (const drop of [...this.droppers]) drop(failure);
  }

  async stop(): Promise<void> {
    for (const call of this.open) call.destroy();
    this.open.clear();
    this.live.clear();
    this.server.forceShutdown();
  }

  private store(event: Omit<FakeStoredEvent, 'revision' | 'position' | 'createdMs'>): FakeStoredEvent {
    const last = this.log.at(-1);
    const stored: FakeStoredEvent = {
      ...event,
      revision: this.streamEvents(event.streamId).length,
      position: (last?.position ?? 0n) + 100n,
      createdMs: Date.now(),
    };
    this.log.push(stored);
    for (const subscriber of this.live) subscriber(stored);
    return stored;
  }

  private streamEvents(streamId: string): FakeStoredEvent[] {
    return this.log.filter((event) => event.streamId === streamId);
  }

  private track(
    kind: FakeCall['kind'],
    call: grpc.ServerWritableStream<ReadReq, ReadResp> | grpc.ServerReadableStream<AppendReq, AppendResp>,
    stream?: string,
  ): FakeCall {
    const record: FakeCall = {
      kind,
      stream,
      requiresLeader: call.metadata.get('requires-leader').some((value: grpc.MetadataValue) => String(value) === 'true'),
      cancelled: false,
      ended: false,
    };
    call.on('cancelled', () => {
      record.cancelled = true;
    });
    this.calls.push(record);
    return record;
  }

  /** NotLeader for a call that requires the leader on a follower; else undefined. */
  private leaderRefusal(record: FakeCall): FakeFailure | undefined {
    const leader = this.behaviour.followerOf;
    return leader && record.requiresLeader ? notLeader(leader.host, leader.port) : undefined;
  }

  private read(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const options = call.request.getOptions()!;
    const subscription = options.hasSubscription();
    const stream = options.hasStream() ? streamName(options.getStream()!.getStreamIdentifier()) : undefined;
    const record = this.track(subscription ? 'subscribe' : stream !== undefined ? 'read-stream' : 'read-all', call, stream);
    this.open.add(call);
    const finish = (failure?: FakeFailure) => {
      this.open.delete(call);
      record.ended = true;
      if (failure) call.emit('error', toServiceError(failure));
      else call.end();
    };
    call.on('cancelled', () => this.open.delete(call));

    const refusal = this.leaderRefusal(record);
    if (refusal) return finish(refusal);

    if (subscription) return this.subscribe(call, options, finish);
    const behaviour = this.behaviour.read;
    if (behaviour === 'hang') return;
    if (behaviour !== 'serve') return finish(behaviour);

    const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    const count = Number(options.getCount() || '0');
    let events: FakeStoredEvent[];
    if (stream !== undefined) {
      const all = this.streamEvents(stream);
      if (all.length === 0) {
        const notFound = new ReadResp.StreamNotFound();
        notFound.setStreamIdentifier(identifier(stream));
        call.write(new ReadResp().setStreamNotFound(notFound));
        return finish();
      }
      const from = options.getStream()!;
      const revision = from.hasRevision() ? Number(from.getRevision()) : from.hasEnd() ? Infinity : 0;
      events = backwards ? all.filter((event) => event.revision <= revision).reverse() : all.filter((event) => event.revision >= revision);
    } else {
      const all = options.getAll()!;
      const position = all.hasPosition() ? BigInt(all.getPosition()!.getCommitPosition()) : undefined;
      events = backwards
        ? this.log.filter((event) => position === undefined || event.position <= position).reverse()
        : this.log.filter((event) => position === undefined || all.hasStart() || event.position >= position);
    }
    for (const event of events.slice(0, count)) call.write(toReadResp(event));
    finish();
  }

  private subscribe(call: grpc.ServerWritableStream<ReadReq, ReadResp>, options: ReadReq.Options, finish: (failure?: FakeFailure) => void): void {
    const behaviour = this.behaviour.subscribe;
    if (behaviour === 'hang') return;
    if (typeof behaviour === 'object' && 'code' in behaviour) return finish(behaviour);
    const confirm = () => call.write(new ReadResp().setConfirmation(new ReadResp.SubscriptionConfirmation().setSubscriptionId(randomUUID())));
    confirm();
    if (behaviour === 'confirm-then-hang') return;
    if (typeof behaviour === 'object') {
      setTimeout(() => finish(behaviour.confirmThen), 5);
      return;
    }

    const all = options.getAll()!;
    let after = -1n;
    if (all.hasPosition()) {
      const position = all.getPosition()!;
      after = BigInt(position.getCommitPosition());
      // A position that is none of this log's events: as a checkpoint kept across a recreated database.
      if (!this.log.some((event) => event.position === after)) {
        setTimeout(() => finish(invalidPosition(after, BigInt(position.getPreparePosition()))), 5);
        return;
      }
    } else if (all.hasEnd()) {
      after = this.log.at(-1)?.position ?? -1n;
    }
    const matches = subscriptionFilter(options);
    for (const event of this.log) if (event.position > after && matches(event)) call.write(toReadResp(event));
    call.write(new ReadResp().setCaughtUp(new ReadResp.CaughtUp()));
    const subscriber: LiveSubscriber = (event) => {
      if (matches(event)) call.write(toReadResp(event));
    };
    this.live.add(subscriber);
    const drop = (failure: FakeFailure) => {
      stop();
      finish(failure);
    };
    this.droppers.add(drop);
    const stop = () => {
      this.live.delete(subscriber);
      this.droppers.delete(drop);
    };
    call.on('cancelled', stop);
    call.on('close', stop);
  }

  private appendCall(call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>): void {
    let stream: string | undefined;
    let expected: AppendReq.Options | undefined;
    const proposed: AppendReq.ProposedMessage[] = [];
    let record: FakeCall | undefined;
    call.on('data', (request: AppendReq) => {
      if (request.hasOptions()) {
        expected = request.getOptions()!;
        stream = streamName(expected.getStreamIdentifier());
      } else if (request.hasProposedMessage()) {
        proposed.push(request.getProposedMessage()!);
      }
    });
    call.on('end', () => {
      record = this.track('append', call, stream);
      const reply = (failure?: FakeFailure, response?: AppendResp) => {
        record!.ended = true;
        if (failure) callback(toServiceError(failure));
        else callback(null, response);
      };
      const refusal = this.leaderRefusal(record);
      if (refusal) return reply(refusal);
      const behaviour = this.behaviour.append;
      if (behaviour === 'hang') return;
      if (behaviour !== 'serve') return reply(behaviour);

      const outcome = this.decideAppend(stream!, expected!, proposed);
      const response = new AppendResp();
      if ('current' in outcome) {
        const wrong = new AppendResp.WrongExpectedVersion();
        if (outcome.current >= 0) wrong.setCurrentRevision(String(outcome.current));
        else wrong.setCurrentNoStream(new Empty());
        const Case = AppendReq.Options.ExpectedStreamRevisionCase;
        const wanted = expected!.getExpectedStreamRevisionCase();
        if (wanted === Case.REVISION) wrong.setExpectedRevision(expected!.getRevision());
        else if (wanted === Case.NO_STREAM) wrong.setExpectedNoStream(new Empty());
        else if (wanted === Case.STREAM_EXISTS) wrong.setExpectedStreamExists(new Empty());
        else wrong.setExpectedAny(new Empty());
        return reply(undefined, response.setWrongExpectedVersion(wrong));
      }
      const success = new AppendResp.Success().setCurrentRevision(String(outcome.last.revision));
      success.setPosition(new AppendResp.Position().setCommitPosition(String(outcome.last.position)).setPreparePosition(String(outcome.last.position)));
      reply(undefined, response.setSuccess(success));
    });
  }

  /**
   * BatchAppend, as servers from 21.10 on serve it: one long-lived call for all of a client's
   * appends; each append is requests with its correlation id (options on the first, is_final on the
   * last), answered by a response with that id. NotLeader ends the whole call (the client fails
   * every append waiting on it); `append: 'hang'` leaves appends unanswered while the call stays open.
   */
  private batchAppendCall(call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>): void {
    const record = this.track('batch-append', call as unknown as grpc.ServerReadableStream<AppendReq, AppendResp>);
    const refusal = this.leaderRefusal(record);
    if (refusal) {
      record.ended = true;
      call.emit('error', toServiceError(refusal));
      return;
    }
    const pending = new Map<string, { options?: BatchAppendReq.Options; proposed: Array<BatchAppendReq.ProposedMessage> }>();
    call.on('data', (request: BatchAppendReq) => {
      const correlation = request.getCorrelationId()!.getString();
      const append = pending.get(correlation) ?? { proposed: [] };
      pending.set(correlation, append);
      if (request.hasOptions()) append.options = request.getOptions();
      append.proposed.push(...request.getProposedMessagesList());
      if (!request.getIsFinal()) return;
      pending.delete(correlation);
      this.calls.push({
        kind: 'append',
        stream: streamName(append.options!.getStreamIdentifier()),
        requiresLeader: record.requiresLeader,
        cancelled: false,
        ended: false,
      });
      const behaviour = this.behaviour.append;
      if (behaviour === 'hang') return;
      const response = new BatchAppendResp().setCorrelationId(new UUID().setString(correlation)).setStreamIdentifier(append.options!.getStreamIdentifier());
      if (behaviour !== 'serve') {
        call.write(response.setError(new Status().setCode(behaviour.code as number).setMessage(behaviour.details)));
        return;
      }
      const options = append.options!;
      const Case = BatchAppendReq.Options.ExpectedStreamPositionCase;
      const wanted = options.getExpectedStreamPositionCase();
      const outcome = this.decideAppend(
        streamName(options.getStreamIdentifier()),
        {
          any: wanted === Case.ANY || wanted === Case.EXPECTED_STREAM_POSITION_NOT_SET,
          noStream: wanted === Case.NO_STREAM,
          streamExists: wanted === Case.STREAM_EXISTS,
          revision: wanted === Case.STREAM_POSITION ? BigInt(options.getStreamPosition()) : undefined,
        },
        append.proposed,
      );
      if ('current' in outcome) {
        const wrong = new WrongExpectedVersion();
        if (outcome.current >= 0) wrong.setCurrentStreamRevision(String(outcome.current));
        else wrong.setCurrentNoStream(new Empty());
        if (wanted === Case.STREAM_POSITION) wrong.setExpectedStreamPosition(options.getStreamPosition());
        else if (wanted === Case.NO_STREAM) wrong.setExpectedNoStream(new Empty());
        else if (wanted === Case.STREAM_EXISTS) wrong.setExpectedStreamExists(new Empty());
        else wrong.setExpectedAny(new Empty());
        const details = new Any();
        details.pack(wrong.serializeBinary(), 'event_store.client.WrongExpectedVersion');
        call.write(response.setError(new Status().setCode(9).setMessage('Wrong expected version').setDetails(details)));
        return;
      }
      const position = new AllStreamPosition().setCommitPosition(String(outcome.last.position)).setPreparePosition(String(outcome.last.position));
      call.write(response.setSuccess(new BatchAppendResp.Success().setCurrentRevision(String(outcome.last.revision)).setPosition(position)));
    });
    call.on('end', () => {
      record.ended = true;
      call.end();
    });
  }

  /** An append's outcome on this node's log (or the leader's it forwards to): the last event written, or the stream's current revision when the expectation fails. */
  private decideAppend(
    stream: string,
    expected: AppendReq.Options | { any: boolean; noStream: boolean; streamExists: boolean; revision: bigint | undefined },
    proposed: Array<AppendReq.ProposedMessage | BatchAppendReq.ProposedMessage>,
  ): { last: FakeStoredEvent } | { current: number } {
    const node = this.behaviour.forwardAppendsTo ?? this;
    const current = node.streamEvents(stream).length - 1;
    let wanted = expected as { any: boolean; noStream: boolean; streamExists: boolean; revision: bigint | undefined };
    if (expected instanceof AppendReq.Options) {
      const Case = AppendReq.Options.ExpectedStreamRevisionCase;
      const which = expected.getExpectedStreamRevisionCase();
      wanted = {
        any: which === Case.ANY,
        noStream: which === Case.NO_STREAM,
        streamExists: which === Case.STREAM_EXISTS,
        revision: which === Case.REVISION ? BigInt(expected.getRevision()) : undefined,
      };
    }
    const ok =
      wanted.any ||
      (wanted.noStream && current === -1) ||
      (wanted.streamExists && current >= 0) ||
      (wanted.revision !== undefined && wanted.revision === BigInt(current));
    if (!ok) return { current };
    let last: FakeStoredEvent | undefined;
    for (const message of proposed) {
      last = node.store({
        streamId: stream,
        id: message.getId()!.getString(),
        type: message.getMetadataMap().get('type') ?? '',
        contentType: message.getMetadataMap().get('content-type') ?? 'application/octet-stream',
        data: message.getData_asU8(),
        metadata: message.getCustomMetadata_asU8(),
      });
    }
    return { last: last! };
  }
}

function streamName(identifier: StreamIdentifier | undefined): string {
  return Buffer.from(identifier!.getStreamName_asU8()).toString('utf8');
}

function identifier(stream: string): StreamIdentifier {
  return new StreamIdentifier().setStreamName(Buffer.from(stream, 'utf8'));
}

function toReadResp(event: FakeStoredEvent): ReadResp {
  const recorded = new ReadResp.ReadEvent.RecordedEvent()
    .setId(new UUID().setString(event.id))
    .setStreamIdentifier(identifier(event.streamId))
    .setStreamRevision(String(event.revision))
    .setCommitPosition(String(event.position))
    .setPreparePosition(String(event.position))
    .setData(event.data)
    .setCustomMetadata(event.metadata);
  const metadata = recorded.getMetadataMap();
  metadata.set('type', event.type);
  metadata.set('content-type', event.contentType);
  metadata.set('created', String(BigInt(event.createdMs) * TICKS_PER_MS));
  const read = new ReadResp.ReadEvent().setEvent(recorded).setCommitPosition(String(event.position));
  return new ReadResp().setEvent(read);
}

/** The subscription's server-side filter: stream-name prefixes or an event-type regex. */
function subscriptionFilter(options: ReadReq.Options): (event: FakeStoredEvent) => boolean {
  if (!options.hasFilter()) return () => true;
  const filter = options.getFilter()!;
  const expression = filter.hasStreamIdentifier() ? filter.getStreamIdentifier()! : filter.getEventType()!;
  const field = (event: FakeStoredEvent) => (filter.hasStreamIdentifier() ? event.streamId : event.type);
  const prefixes = expression.getPrefixList();
  const regex = expression.getRegex() ? new RegExp(expression.getRegex()) : undefined;
  return (event) => (prefixes.length === 0 || prefixes.some((prefix) => field(event).startsWith(prefix))) && (!regex || regex.test(field(event)));
}

function toServiceError(failure: FakeFailure): Partial<grpc.ServiceError> {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(failure.trailers ?? {})) metadata.set(key, value);
  return { code: failure.code, details: failure.details, metadata };
}
