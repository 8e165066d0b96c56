import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { Logger } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** This process's Prometheus metrics, served at /metrics on every app's METRICS_PORT (metrics.server.ts). */
export const registry = new Registry();
// The event loop's delay is sampled every 500 ms rather than every 10 ms (prom-client's default):
// each sample wakes an idle process, and a delay worth an alert lasts far longer than a sample.
export const EVENT_LOOP_SAMPLE_MS = 500;
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time to answer an HTTP request.',
  labelNames: ['method', 'route'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const processorLag = new Gauge({
  name: 'event_processor_lag_seconds',
  help: 'Age of the last event a checkpointed processor (relay or projection) handled, when it handled it.',
  labelNames: ['processor'] as const,
  registers: [registry],
});

export const processorCheckpoint = new Gauge({
  name: 'event_processor_checkpoint_timestamp_seconds',
  help: 'When the event at a processor’s checkpoint occurred (unix seconds); now minus this is the checkpoint age.',
  labelNames: ['processor'] as const,
  registers: [registry],
});

export const processorEvents = new Counter({
  name: 'event_processor_events_total',
  help: 'Events handled by a checkpointed processor.',
  labelNames: ['processor'] as const,
  registers: [registry],
});

export const deliveryAttempts = new Counter({
  name: 'webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts, by outcome (succeeded, failed).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const dispatchesExecuting = new Gauge({
  name: 'dispatch_provider_calls_in_flight',
  help: 'Dispatches whose provider call this process has under way.',
  registers: [registry],
});

/** A gauge read at scrape time, e.g. dispatches by status from the read model, or a consumer's lag. */
export function scrapeGauge<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => Promise<Array<[Record<L, string>, number]>>,
): void {
  if (registry.getSingleMetric(name)) registry.removeSingleMetric(name);
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [labels, value] of await read()) this.set(labels, value);
    },
  });
}

const watchedConsumers: Array<{ bus: { pending(durable: string): Promise<number> }; durable: string }> = [];
new Gauge({
  name: 'bus_consumer_pending_messages',
  help: 'Messages a durable consumer has not acked yet: its lag.',
  labelNames: ['durable'] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const { bus, durable } of watchedConsumers) this.set({ durable }, await bus.pending(durable).catch(() => 0));
  },
});

/** Reports these durable consumers' lag at /metrics. */
export function watchConsumerLag(bus: { pending(durable: string): Promise<number> }, durables: string[]): void {
  for (const durable of durables) if (!watchedConsumers.some((w) => w.durable === durable)) watchedConsumers.push({ bus, durable });
}

/** Ids in paths become `:id`, so a label never holds one value per resource. */
export const routeLabel = (path: string): string => path.replace(/\/[a-z]+_[0-9A-Za-z]+(?=\/|$)/g, '/:id');

const accessLog = new Logger('http');

/** Set on a request whose answer is already counted and timed (one taken before express: the gateway's launches). */
export const HTTP_ANSWER_OBSERVED = Symbol('http-answer-observed');

/** Counts and times every answer; a line per request in the log at debug level. */
export function httpMetricsMiddleware(request: Request, response: Response, next: NextFunction): void {
  if (!(request as { [HTTP_ANSWER_OBSERVED]?: true })[HTTP_ANSWER_OBSERVED]) observeHttpAnswer(request, request.path, response);
  next();
}

/** Counts and times the answer to `request` (at `path`, its URL without the query) once it is sent. */
export function observeHttpAnswer(request: { method?: string }, path: string, response: ServerResponse): void {
  (request as { [HTTP_ANSWER_OBSERVED]?: true })[HTTP_ANSWER_OBSERVED] = true;
  const started = process.hrtime.bigint();
  const method = request.method ?? 'GET';
  response.on('finish', () => {
    const route = routeLabel(path);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    httpRequests.inc({ method, route, status: String(response.statusCode) });
    httpDuration.observe({ method, route }, seconds);
    accessLog.debug({
      msg: 'request',
      method,
      route,
      status: response.statusCode,
      duration_ms: Math.round(seconds * 1000),
      request_id: response.getHeader('X-Request-Id'),
    });
  });
}
