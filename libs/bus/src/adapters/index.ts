/** The bus's adapters (`@campaign-ops/adapters/bus`): in-process, and NATS with its permissions. The port is `@campaign-ops/bus`. */
export * from '../in-process-bus';
export * from '../nats-bus';
export * from '../nats-permissions';
