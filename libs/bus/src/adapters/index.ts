/**
 * The bus's adapters (`@campaign-ops/adapters/bus`): in-process, and NATS with its permissions. The
 * port is `@campaign-ops/bus`. The NATS adapter's module, with the nats client, loads on the first
 * use of one of its exports, so the standalone process on the in-process bus never loads it.
 */
import type * as Nats from '../nats-bus';

export * from '../in-process-bus';
export * from '../nats-permissions';
export type { NatsBusOptions, StreamSettings } from '../nats-bus';
export type NatsBus = Nats.NatsBus;
export declare const NatsBus: typeof Nats.NatsBus;
export declare const ensureStream: typeof Nats.ensureStream;

for (const name of ['NatsBus', 'ensureStream'] as const)
  Object.defineProperty(exports, name, {
    enumerable: true,
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    get: () => (require('../nats-bus') as typeof Nats)[name],
  });
