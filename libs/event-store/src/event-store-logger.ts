/** Where the adapters report what no caller is waiting for (dropped subscriptions, resubscriptions, stalls). */
export interface EventStoreLogger {
  warn(message: string): void;
  error(message: string): void;
}

export const consoleEventStoreLogger: EventStoreLogger = {
  warn: (message) => console.warn(`[event-store] ${message}`),
  error: (message) => console.error(`[event-store] ${message}`),
};
