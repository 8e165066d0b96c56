import { ClientProxy, ReadPacket, WritePacket } from '@nestjs/microservices';
import { Bus, BusHeaders } from '@campaign-ops/bus';

/** A request with headers (the caller's request id travels as `X-Request-Id`). */
export class BusRecord<T = unknown> {
  constructor(
    readonly data: T,
    readonly headers: BusHeaders = {},
  ) {}
}

export interface BusClientOptions {
  bus: Bus;
  /** Past this, `send` fails with BusTimeoutError. */
  requestTimeoutMs: number;
}

/**
 * The other end of BusTransport: `client.send(subject, data | new BusRecord(data, headers))` is a
 * request answered by one replica; `client.emit(subject, data)` publishes a durable event. Errors
 * are the bus's own (BusTimeoutError, BusUnavailableError, BusRemoteError), unchanged.
 */
export class BusClient extends ClientProxy {
  private readonly bus: Bus;
  private readonly requestTimeoutMs: number;

  constructor(options: BusClientOptions) {
    super();
    this.bus = options.bus;
    this.requestTimeoutMs = options.requestTimeoutMs;
  }

  async connect(): Promise<void> {
    // The bus is connected (and closed) by the app's infrastructure, not per client.
  }

  async close(): Promise<void> {}

  unwrap<T>(): T {
    return this.bus as T;
  }

  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const { data, headers } = unpack(packet.data);
    this.bus.request(packet.pattern, data, { timeoutMs: this.requestTimeoutMs, headers }).then(
      (response) => callback({ response, isDisposed: true }),
      (err: unknown) => callback({ err }),
    );
    return () => undefined;
  }

  protected async dispatchEvent<T = unknown>(packet: ReadPacket): Promise<T> {
    const { data, headers } = unpack(packet.data);
    await this.bus.publish(packet.pattern, data, { headers });
    return undefined as T;
  }
}

function unpack(data: unknown): { data: unknown; headers: BusHeaders } {
  return data instanceof BusRecord ? { data: data.data, headers: data.headers } : { data, headers: {} };
}
