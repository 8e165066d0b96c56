import { BaseRpcContext } from '@nestjs/microservices';
import { BusHeaders } from '@campaign-ops/bus';

/** What a message handler may ask about the message beside its payload (`@Ctx() context: BusContext`). */
export class BusContext extends BaseRpcContext<[subject: string, headers: BusHeaders, deliveryCount: number]> {
  /** The concrete subject, also when the pattern has wildcards. */
  getSubject(): string {
    return this.args[0];
  }

  getHeaders(): BusHeaders {
    return this.args[1];
  }

  /** 1 on the first delivery of a durable message; always 1 for a request. */
  getDeliveryCount(): number {
    return this.args[2];
  }
}
