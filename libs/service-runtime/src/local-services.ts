import { Injectable } from '@nestjs/common';
import { Bus, DEFAULT_REQUEST_TIMEOUT_MS, replyWithin } from '@campaign-ops/bus';
import { BusContext } from '@campaign-ops/bus-transport';
import { busRequestContext } from './bus-messages';
import { requestIdHeader, requestService, ServiceRequestOptions } from './service-request';

type LocalHandler = (request: never) => Promise<unknown>;

/**
 * Requests a service of this process answers as function calls. The standalone process holds the
 * gateway and every service: a launch's two requests (`svc.dispatch.create` from the gateway,
 * `svc.connection.resolve` from dispatch-service) went through the in-process bus, its two JSON
 * copies each way and NestJS's RPC pipeline, about 170 µs a launch (measured). A subject served
 * here is answered by calling its handler with the caller's object: the handler must not keep or
 * change the request, and the caller gets the handler's answer as it is. The rest is as over the
 * bus: the request id and the debug line of every handled message (busRequestContext), the
 * timeout (BusTimeoutError), a failure reported by its message (BusRemoteError). A subject no
 * service of this process serves (the four apps each hold one) goes over the bus.
 */
@Injectable()
export class LocalServices {
  private readonly handlers = new Map<string, LocalHandler>();

  /** `handler` answers `subject` for callers in this process; its `@MessagePattern` still answers everyone else over the bus. */
  serve<Req, Res>(subject: string, handler: (request: Req) => Promise<Res>): void {
    if (this.handlers.has(subject)) throw new Error(`${subject} is already served in this process`);
    this.handlers.set(subject, handler as LocalHandler);
  }

  /** requestService, but a handler of this process answers a subject it serves directly. */
  request<T>(bus: Bus, subject: string, payload: object, options: ServiceRequestOptions = {}): Promise<T> {
    const handler = this.handlers.get(subject);
    if (!handler) return requestService<T>(bus, subject, payload, options);
    const headers = requestIdHeader(options.requestId);
    return replyWithin(
      subject,
      busRequestContext(() => handler(payload as never), payload, new BusContext([subject, headers, 1])) as Promise<T>,
      options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    );
  }
}
