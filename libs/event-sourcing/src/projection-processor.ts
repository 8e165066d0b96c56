import { EventStore, RecordedEvent } from '@campaign-ops/event-store';
import { CheckpointStore } from '@campaign-ops/read-store';
import { CheckpointedProcessor } from '@campaign-ops/service-runtime';
import { LiveProjection } from './projection';

export interface ProjectionProcessorOptions {
  eventStore: EventStore;
  checkpoints: CheckpointStore;
  /**
   * What the processor does beside keeping the model, after it (idempotent: events come again
   * after a crash). Given exactly when the projection says its processor `reacts`.
   */
  react?(event: RecordedEvent): Promise<void>;
}

/** The one processor that keeps a projection live: each event of its streams brings that stream's documents up to it. */
export function projectionProcessor(live: LiveProjection, options: ProjectionProcessorOptions): CheckpointedProcessor {
  const { name, reacts } = live.projection.processor;
  if (reacts !== (options.react !== undefined)) {
    throw new Error(`the ${name} processor ${reacts ? 'reacts to events: give it what it does' : 'only projects: it takes no reaction'}`);
  }
  return new CheckpointedProcessor({
    name,
    eventStore: options.eventStore,
    checkpoints: options.checkpoints,
    streamPrefixes: [live.projection.streamPrefix],
    handle: async (event) => {
      await live.refresh(event.streamId, event.revision);
      await options.react?.(event);
    },
  });
}
