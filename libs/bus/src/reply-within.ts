import { BusRemoteError, BusTimeoutError } from './bus.port';
import { errorMessage } from './payload';

/**
 * What the caller of a request answered in this process gets (the in-process bus, and
 * LocalServices' direct calls): the reply, the responder's failure as BusRemoteError with its
 * message, or BusTimeoutError once `timeoutMs` has passed, never a hang.
 */
export async function replyWithin<T>(subject: string, reply: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BusTimeoutError(subject)), timeoutMs);
  });
  const remote = reply.catch((error: unknown) => {
    throw new BusRemoteError(subject, errorMessage(error));
  });
  try {
    return await Promise.race([remote, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
