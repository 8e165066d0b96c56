export * from './aggregate-repository';
export * from './keyed-mutex';
export * from './canonical-order';
export * from './projection';
export * from './projection-processor';
