// One catch-up subscription to `$all` as a source the ResubscribingFollower follows: server-side
// filter, checkpoints as proof of life, a refused start position as a permanent error.
import { AllStreamResolvedEvent, excludeSystemEvents, Position, START, streamNameFilter, UnknownError } from '@eventstore/db-client';
import { decodePosition, encodePosition, isUnknownPosition } from './esdb-position';
import { FollowedItem, FollowedSource, SourceSignals } from './resubscribing-follower';
import { SubscriptionPositionRefusedError } from './eventstoredb-errors';
import { isDeliverable, toRecordedEvent } from './eventstoredb-calls';
import { EventStoreDbClientLike } from './eventstoredb-options';

/** gRPC's INVALID_ARGUMENT: the server refuses the request as such; asking again cannot help. */
const GRPC_INVALID_ARGUMENT = 3;

/** One catch-up subscription to `$all`, strictly after `fromPosition`, as a source of items. */
export function openSubscription(
  client: EventStoreDbClientLike,
  fromPosition: string | undefined,
  prefixes: string[] | undefined,
  signals: SourceSignals,
): FollowedSource {
  // Checkpoints (sent by the server for filtered subscriptions, also while nothing matches) are
  // proof of life, and tell how far the server has looked.
  const checkpointReached = (_subscription: unknown, position: Position) => {
    signals.alive(isUnknownPosition(position) ? undefined : encodePosition(position));
  };
  const subscription = client.subscribeToAll({
    fromPosition: fromPosition === undefined ? START : decodePosition(fromPosition),
    filter: prefixes ? streamNameFilter({ prefixes, checkpointReached }) : excludeSystemEvents({ checkpointReached }),
    // On a follower, NotLeader drops it and the client reconnects to the leader: the resubscription goes there.
    requiresLeader: true,
  });
  const alive = () => signals.alive();
  subscription.on('confirmation', alive).on('caughtUp', alive).on('fellBehind', alive);
  // The iteration reports errors; this keeps one coming after it has stopped from crashing the process.
  subscription.on('error', () => {});

  return {
    [Symbol.asyncIterator]: async function* (): AsyncGenerator<FollowedItem> {
      try {
        // Pulling one event at a time from the stream holds the server back while a handler runs.
        for await (const resolved of subscription as AsyncIterable<AllStreamResolvedEvent>) {
          const event = resolved.event;
          if (!event || isUnknownPosition(event.position)) {
            signals.alive();
            continue;
          }
          if (!isDeliverable(event.streamId, event.type, prefixes)) {
            yield { kind: 'skipped', position: encodePosition(event.position) };
          } else {
            yield { kind: 'event', event: toRecordedEvent(event) };
          }
        }
      } catch (error) {
        // The client reports INVALID_ARGUMENT without an exception name as an UnknownError.
        if (error instanceof UnknownError && error.code === GRPC_INVALID_ARGUMENT) {
          throw new SubscriptionPositionRefusedError(fromPosition, error);
        }
        throw error;
      }
    },
    close: async () => {
      try {
        await subscription.unsubscribe();
      } finally {
        subscription.destroy();
      }
    },
  };
}
