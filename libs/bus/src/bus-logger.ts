/** Where the adapters report what no caller is waiting for (handler failures, parked messages, reconnects). */
export interface BusLogger {
  warn(message: string): void;
  error(message: string): void;
}

export const consoleBusLogger: BusLogger = {
  warn: (message) => console.warn(`[bus] ${message}`),
  error: (message) => console.error(`[bus] ${message}`),
};
