import { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Logger as Pino } from 'pino';
import { currentRequestId } from './request-context';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug';

/**
 * One JSON object per line, written by pino: `time` (ISO 8601), `level` (its name), `app`,
 * `context`, `msg`, `stack` for errors, and the `request_id` of the work in progress (an HTTP
 * request, or a bus message: the AsyncLocalStorage of request-context.ts carries it across both).
 * Secrets never reach it: nothing logs keys, tokens or signing secrets, and `authorization`,
 * `credentials` and token fields are redacted should one ever be passed.
 */
export function createPino(app: string, level: 'debug' | 'info' | 'warn' | 'error', destination: DestinationStream = pino.destination({ sync: true })): Pino {
  return pino(
    {
      level,
      base: { app },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const requestId = currentRequestId();
        return requestId ? { request_id: requestId } : {};
      },
      redact: { paths: REDACTED, censor: '[redacted]' },
    },
    destination,
  );
}

/** Fields that hold secrets, at the top and one level down: API keys, and provider tokens (connection-service never logs them; this is the net under that). */
const SECRET_FIELDS = ['authorization', 'credentials', 'access_token', 'refresh_token', 'accessToken', 'refreshToken'];
const REDACTED = [...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]), 'headers.cookie'];

/** Nest's logger interface over pino: `new Logger('context')` anywhere in the apps lands here. */
export class PinoLoggerService implements LoggerService {
  constructor(private readonly pino: Pino) {}

  readonly log = (message: unknown, ...rest: unknown[]) => this.write('info', message, rest);
  readonly error = (message: unknown, ...rest: unknown[]) => this.write('error', message, rest);
  readonly warn = (message: unknown, ...rest: unknown[]) => this.write('warn', message, rest);
  readonly debug = (message: unknown, ...rest: unknown[]) => this.write('debug', message, rest);
  readonly verbose = (message: unknown, ...rest: unknown[]) => this.write('debug', message, rest);
  readonly fatal = (message: unknown, ...rest: unknown[]) => this.write('fatal', message, rest);

  private write(level: Level, message: unknown, rest: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    // Nest passes (message, context) and, for errors, (message, stack, context).
    const context = typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const stack = level === 'error' || level === 'fatal' ? rest.find((r, i) => typeof r === 'string' && i < rest.length - 1) : undefined;
    const fields: Record<string, unknown> = { ...(context && { context }), ...(stack !== undefined && { stack }) };
    if (message instanceof Error) this.pino[level]({ ...fields, stack: message.stack }, message.message);
    else if (typeof message === 'object' && message !== null) this.pino[level]({ ...fields, ...message });
    else this.pino[level](fields, String(message));
  }
}

/** The logger of an app: JSON lines on stdout at its LOG_LEVEL. */
export const appLogger = (config: { app: string; logLevel: 'debug' | 'info' | 'warn' | 'error' }) =>
  new PinoLoggerService(createPino(config.app, config.logLevel));
