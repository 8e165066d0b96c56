import type { Mode } from '@campaign-ops/account-domain';
import { Inject, Injectable } from '@nestjs/common';
import { fold } from '@campaign-ops/decider';
import { AggregateRepository, EventMetadata, LiveProjection, Projection, toDomainEvent } from '@campaign-ops/event-sourcing';
import { EVENT_STORE, EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { Collection, IndexSpec, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import {
  Connection,
  CONNECTION_STREAM_PREFIX,
  ConnectionCommand,
  connectionDecider,
  ConnectionEvent,
  ConnectionNotFound,
  ConnectionResource,
  ConnectionState,
  connectionStreamId,
  toConnectionResource,
  upcastConnectionEvent,
} from '@campaign-ops/connection-domain';

/** A connection as the `connections` read model keeps it: the resource plus its tenancy. */
export type ConnectionView = ConnectionResource & { account_id: string; mode: Mode } & Record<string, unknown>;

/** Its indexes; the compound one serves the read of every launch (a channel's connection of an account and mode) exactly, statistics or not. */
export const CONNECTION_VIEW_INDEXES: IndexSpec[] = ['account_id', 'mode', 'channel', 'status', 'expires_at', ['account_id', 'mode', 'channel']];

/**
 * The `connections` read model: one document per connection, its resource plus its tenancy. Its
 * processor also destroys a revoked connection's tokens (see ConnectionProcessors), so a rebuild
 * leaves that checkpoint alone.
 */
export const connectionsProjection: Projection<ConnectionState> = {
  name: 'connections',
  streamPrefix: CONNECTION_STREAM_PREFIX,
  collections: [{ name: 'connections', indexes: CONNECTION_VIEW_INDEXES, readMostly: true }],
  processor: { name: 'connection-views', reacts: true },
  documentId: (streamId) => streamId.slice(CONNECTION_STREAM_PREFIX.length),
  initialState: () => connectionDecider.initialState,
  evolve: (state, event) => connectionDecider.evolve(state, toDomainEvent(event, upcastConnectionEvent)),
  documents: (state) => (state.status === 'none' ? [] : [{ collection: 'connections', doc: toView(state) }]),
};

/**
 * An OAuth `state` as the callback finds it: by its SHA-256 (the state itself is never stored),
 * with where to send the browser back even once it is spent. Kept after use, so a second use is
 * told apart from a state never issued, until SPENT_STATE_WINDOW_MS past its expiry; then the
 * periodic sweep deletes it (by `expires_at`).
 */
export interface OAuthStateRecord {
  id: string;
  connection_id: string;
  account_id: string;
  mode: Mode;
  redirect_uri: string;
  expires_at: string;
  /** Test keys: the simulated ad account the round ends with. */
  sandbox: { currency: string; timezone: string } | null;
  /** What the network's callback must carry back for this round (X: the request token); absent for most networks. */
  consent_binding?: string | null;
  created_at: string;
  [field: string]: unknown;
}

/** A channel's slot (account, mode, channel): who holds the right to change which connection is active there, until when. */
export interface ChannelSlotRecord {
  id: string;
  holder: string;
  lease_until: string;
  [field: string]: unknown;
}

/** Where connections are written (their streams) and read (their view, OAuth states), for every use case. */
@Injectable()
export class ConnectionStore {
  readonly repository: AggregateRepository<ConnectionCommand, ConnectionEvent, ConnectionState>;
  readonly live: LiveProjection<ConnectionState>;
  readonly views: Collection<ConnectionView>;
  readonly oauthStates: Collection<OAuthStateRecord>;
  readonly channelSlots: Collection<ChannelSlotRecord>;

  constructor(
    @Inject(EVENT_STORE) readonly events: EventStore,
    @Inject(READ_STORE) readStore: ReadStore,
  ) {
    this.repository = new AggregateRepository(events, connectionDecider, upcastConnectionEvent);
    this.live = new LiveProjection(connectionsProjection, events, readStore);
    this.views = this.live.collection<ConnectionView>('connections');
    this.oauthStates = readStore.collection<OAuthStateRecord>('connection_oauth_states', { indexes: ['connection_id', 'expires_at'] });
    this.channelSlots = readStore.collection<ChannelSlotRecord>('connection_channel_slots');
  }

  /** The connection from its stream (the truth), or null when it does not exist. */
  async load(connectionId: string): Promise<Connection | null> {
    const { state } = await this.repository.load(connectionStreamId(connectionId));
    return state.status === 'none' ? null : state;
  }

  /** The connection as of `upToRevision` (inclusive), or its latest state. */
  async stateOf(streamId: string, upToRevision?: number): Promise<{ state: ConnectionState; recorded: RecordedEvent[] }> {
    const recorded = await this.events.readStream(streamId, upToRevision === undefined ? {} : { maxCount: upToRevision + 1 });
    const history = recorded.map((r) => toDomainEvent(r, upcastConnectionEvent));
    return { state: fold(connectionDecider, history), recorded };
  }

  /** Decides and appends a command, then brings the view up to it (read-your-writes). */
  async execute(connectionId: string, command: ConnectionCommand, metadata: EventMetadata): Promise<Connection> {
    const streamId = connectionStreamId(connectionId);
    const decided = await this.repository.execute(streamId, command, metadata);
    if (decided.state.status === 'none') throw new ConnectionNotFound('no such connection');
    await this.refreshView(streamId);
    return decided.state;
  }

  /** Brings the view up to the stream (read-your-writes after a command; the projection does it again, changing nothing). */
  async refreshView(streamId: string): Promise<void> {
    await this.live.refresh(streamId);
  }
}

export const toView = (c: Connection): ConnectionView => ({ ...toConnectionResource(c), account_id: c.accountId, mode: c.mode });

export function fromView(view: ConnectionView): ConnectionResource {
  const { account_id: _account, mode: _mode, ...resource } = view;
  return resource as ConnectionResource;
}
