import { ErrorCode, NatsError } from 'nats';
import { makeHotPathErrorsCheap } from './nats-hot-path-errors';

describe('makeHotPathErrorsCheap', () => {
  beforeAll(() => makeHotPathErrorsCheap());

  it('given it applied, when nats.js makes a CANCELLED error, then it is a NatsError with its code and message but no captured stack', () => {
    const error = NatsError.errorForCode(ErrorCode.Cancelled);
    expect(error).toBeInstanceOf(NatsError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'NatsError', code: ErrorCode.Cancelled, message: ErrorCode.Cancelled });
    expect(error.stack).toBe(`NatsError: ${ErrorCode.Cancelled}`);
  });

  it('given it applied, when nats.js makes a TIMEOUT error (every pull does, up front), then it has no captured stack either', () => {
    const error = NatsError.errorForCode(ErrorCode.Timeout);
    expect(error).toBeInstanceOf(NatsError);
    expect(error).toMatchObject({ code: ErrorCode.Timeout, message: ErrorCode.Timeout });
    expect(error.stack).toBe(`NatsError: ${ErrorCode.Timeout}`);
  });

  it('given it applied, when nats.js makes any other error, or a CANCELLED one with a cause, then it is made as before, its stack captured', () => {
    const denied = NatsError.errorForCode(ErrorCode.PermissionsViolation);
    expect(denied).toMatchObject({ code: ErrorCode.PermissionsViolation });
    expect(denied.stack).toMatch(/\n\s+at /);
    const cause = new Error('socket closed');
    const chained = NatsError.errorForCode(ErrorCode.Cancelled, cause);
    expect(chained).toMatchObject({ code: ErrorCode.Cancelled, chainedError: cause });
    expect(chained.stack).toMatch(/\n\s+at /);
  });

  it('given it applied twice, then it wraps nats.js once', () => {
    const before = NatsError.errorForCode;
    makeHotPathErrorsCheap();
    expect(NatsError.errorForCode).toBe(before);
  });
});
