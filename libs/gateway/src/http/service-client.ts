import { Inject, Injectable, Logger } from '@nestjs/common';
import { ApiError, Outcome, unwrap } from '@campaign-ops/api-errors';
import { Bus, BUS, BusRemoteError, BusTimeoutError, BusUnavailableError } from '@campaign-ops/bus';
import { CONFIG, LocalServices } from '@campaign-ops/service-runtime';

export interface CallOptions {
  /** How long to wait for this call, instead of BUS_REQUEST_TIMEOUT_MS. */
  timeoutMs?: number;
}

/**
 * The gateway's only way to the services: a request over the bus whose reply is an Outcome (a
 * function call to a service in this process: LocalServices).
 * A service that does not answer in time is 503 `service_unavailable` with Retry-After, never a hang.
 */
@Injectable()
export class ServiceClient {
  private readonly logger = new Logger('service-client');

  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(CONFIG) private readonly config: { requestTimeoutMs: number },
    private readonly local: LocalServices,
  ) {}

  async call<T>(subject: string, request: object, options: CallOptions = {}): Promise<T> {
    // The caller's request id; a call without a caller (the OAuth callback's browser) names its own.
    const requestId = (request as { caller?: { requestId?: string }; requestId?: string }).caller?.requestId ?? (request as { requestId?: string }).requestId;
    let outcome: Outcome<T>;
    try {
      outcome = await this.local.request<Outcome<T>>(this.bus, subject, request, { timeoutMs: options.timeoutMs ?? this.config.requestTimeoutMs, requestId });
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
