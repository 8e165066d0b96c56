import { LoggerService } from '@nestjs/common';
import { currentRequestId } from './request-context';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug';
const ORDER: Record<Level, number> = { fatal: 0, error: 1, warn: 2, info: 3, debug: 4 };

/**
 * One JSON object per line on stdout: time, level, app, context, message, and the request id of
 * the work in progress. Secrets never reach it: nothing logs keys, tokens or signing secrets.
 */
export class JsonLogger implements LoggerService {
  constructor(
    private readonly app: string,
    private readonly level: 'debug' | 'info' | 'warn' | 'error',
    private readonly write: (line: string) => void = (line) => process.stdout.write(line),
  ) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.emit('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.emit('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.emit('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.emit('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.emit('debug', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.emit('fatal', message, rest);
  }

  private emit(level: Level, message: unknown, rest: unknown[]): void {
    if (ORDER[level] > ORDER[this.level === 'info' ? 'info' : this.level]) return;
    // Nest passes (message, context) and, for errors, (message, stack, context).
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const stack = level === 'error' || level === 'fatal' ? rest.find((r, i) => typeof r === 'string' && i < rest.length - 1) : undefined;
    const line: Record<string, unknown> = { time: new Date().toISOString(), level, app: this.app };
    if (context) line.context = context;
    if (message instanceof Error) {
      line.msg = message.message;
      line.stack = message.stack;
    } else if (typeof message === 'object' && message !== null) {
      Object.assign(line, message);
    } else {
      line.msg = String(message);
    }
    if (stack) line.stack = stack;
    const requestId = currentRequestId();
    if (requestId && line.request_id === undefined) line.request_id = requestId;
    this.write(`${JSON.stringify(line)}\n`);
  }
}
