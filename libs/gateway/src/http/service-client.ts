import { Inject, Injectable, Logger } from '@nestjs/common';
import { ClientProxy } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { ApiError, Outcome, unwrap } from '@campaign-ops/api-errors';
import { Bus, BusRemoteError, BusTimeoutError, BusUnavailableError } from '@campaign-ops/bus';
import { BusRecord } from '@campaign-ops/bus-transport';

/** The bus client the gateway reaches the services with (ClientsModule, over BusClient). */
export const SERVICES = 'SERVICES';

export interface CallOptions {
  /** How long to wait for this call, instead of the bus client's BUS_REQUEST_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * The gateway's only way to the services: a request over the bus whose reply is an Outcome.
 * A service that does not answer in time is 503 `service_unavailable` with Retry-After, never a hang.
 */
@Injectable()
export class ServiceClient {
  private readonly logger = new Logger('service-client');

  constructor(@Inject(SERVICES) private readonly client: ClientProxy) {}

  async call<T>(subject: string, request: object, options: CallOptions = {}): Promise<T> {
    // The caller's request id; a call without a caller (the OAuth callback's browser) names its own.
    const requestId = (request as { caller?: { requestId?: string }; requestId?: string }).caller?.requestId ?? (request as { requestId?: string }).requestId;
    const headers: Record<string, string> = requestId ? { 'X-Request-Id': requestId } : {};
    let outcome: Outcome<T>;
    try {
      outcome =
        options.timeoutMs === undefined
          ? await firstValueFrom(this.client.send<Outcome<T>>(subject, new BusRecord(request, headers)))
          : // The bus client's timeout is one for all its calls: a call with its own goes to the bus beneath it.
            await this.client.unwrap<Bus>().request<Outcome<T>>(subject, request, { timeoutMs: options.timeoutMs, headers });
    } catch (error) {
      if (error instanceof BusTimeoutError || error instanceof BusUnavailableError) {
        this.logger.warn(`${subject}: ${error.message}`);
        throw new ApiError('service_unavailable', 'A service this request needs is unavailable; try again shortly.', undefined, { 'Retry-After': '1' });
      }
      if (error instanceof BusRemoteError) {
        this.logger.error(`${subject} failed in the service: ${error.message}`);
        throw new ApiError('internal_error', 'Something went wrong on our side; the request id helps us find it.');
      }
      throw error;
    }
    return unwrap(outcome);
  }
}
