import { Logger } from '@nestjs/common';
import { createPino, PinoLoggerService } from './pino-logger';
import { withRequestId } from './request-context';

/** The JSON lines an app writes, as operators and log pipelines read them. */
describe('the apps’ JSON logs (pino)', () => {
  const logged = (level: 'debug' | 'info' = 'info') => {
    const lines: string[] = [];
    const logger = new PinoLoggerService(createPino('dispatch-service', level, { write: (line: string) => void lines.push(line) }));
    return { logger, entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>), lines };
  };

  it('writes one JSON object per line: ISO time, level by name, app, context and message', () => {
    const { logger, lines, entries } = logged();
    logger.log('started', 'bootstrap');
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('\n')).toBe(true);
    expect(entries()[0]).toEqual({ time: expect.any(String), level: 'info', app: 'dispatch-service', context: 'bootstrap', msg: 'started' });
    expect(new Date(entries()[0].time as string).toISOString()).toBe(entries()[0].time);
  });

  it('carries the request id of the work in progress, unless the line names its own', () => {
    const { logger, entries } = logged();
    withRequestId('req_abc', () => logger.warn('slow provider', 'executor'));
    withRequestId('req_abc', () => logger.log({ msg: 'message', request_id: 'req_other' }, 'bus'));
    logger.log('no request here');
    expect(entries().map((e) => e.request_id)).toEqual(['req_abc', 'req_other', undefined]);
    expect(entries()[0]).toMatchObject({ level: 'warn', context: 'executor', msg: 'slow provider' });
  });

  it('logs below its level not at all, and debug (and Nest’s verbose) when asked', () => {
    const quiet = logged('info');
    quiet.logger.debug('detail', 'x');
    quiet.logger.verbose('detail', 'x');
    expect(quiet.lines).toEqual([]);
    const chatty = logged('debug');
    chatty.logger.debug('detail', 'x');
    chatty.logger.verbose('more', 'x');
    expect(chatty.entries().map((e) => [e.level, e.msg])).toEqual([
      ['debug', 'detail'],
      ['debug', 'more'],
    ]);
  });

  it('keeps the stack of an error, whether Nest passes it apart or as an Error', () => {
    const { logger, entries } = logged();
    logger.error('stopping failed', 'Error: x\n    at y', 'shutdown');
    logger.fatal(new Error('boom'));
    expect(entries()[0]).toMatchObject({ level: 'error', context: 'shutdown', msg: 'stopping failed', stack: 'Error: x\n    at y' });
    expect(entries()[1]).toMatchObject({ level: 'fatal', msg: 'boom', stack: expect.stringContaining('Error: boom') });
  });

  it('merges the fields of an object message, and never writes an authorization header', () => {
    const { logger, entries } = logged();
    logger.log(
      { msg: 'request', method: 'POST', status: 200, headers: { authorization: 'Bearer mk_live_secret' }, authorization: 'Bearer mk_live_secret' },
      'http',
    );
    expect(entries()[0]).toMatchObject({
      msg: 'request',
      method: 'POST',
      status: 200,
      context: 'http',
      authorization: '[redacted]',
      headers: { authorization: '[redacted]' },
    });
    expect(JSON.stringify(entries())).not.toContain('mk_live_secret');
  });

  it('never writes provider tokens or credentials, should an object carrying them be logged', () => {
    const { logger, entries } = logged();
    logger.warn(
      {
        msg: 'import',
        credentials: { access_token: 'EAAB-secret', refresh_token: 'r-secret' },
        access_token: 'EAAB-secret',
        request: { refresh_token: 'r-secret', accessToken: 'a-secret', refreshToken: 'r-secret' },
      },
      'connections',
    );
    expect(entries()[0]).toMatchObject({
      msg: 'import',
      credentials: '[redacted]',
      access_token: '[redacted]',
      request: { refresh_token: '[redacted]', accessToken: '[redacted]', refreshToken: '[redacted]' },
    });
    expect(JSON.stringify(entries())).not.toMatch(/secret/);
  });

  it('is what `new Logger(context)` writes to, once an app uses it', () => {
    const { logger, entries } = logged();
    Logger.overrideLogger(logger);
    try {
      new Logger('idempotency').warn('lost');
    } finally {
      Logger.overrideLogger(false);
    }
    expect(entries()[0]).toMatchObject({ level: 'warn', context: 'idempotency', msg: 'lost' });
  });
});
