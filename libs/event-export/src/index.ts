export * from './export-line';
export * from './redaction';
export * from './event-export';
export * from './export-verify';
export * from './durable-file';
