import { INestApplication } from '@nestjs/common';
import { jsonBodyMiddleware } from './http/json-body.middleware';
import { RateLimitMiddleware } from './http/rate-limit.middleware';
import { requestIdMiddleware } from './http/request-id.middleware';

/**
 * The express settings of an app that serves the API: request ids first, then the rate limit
 * (every answer carries its headers; a refused request costs no body), then the body reader
 * (before routing, so an oversized or malformed body is refused before any work).
 */
export function configureHttp(app: INestApplication): void {
  app.use(requestIdMiddleware);
  app.use(app.get(RateLimitMiddleware).handle);
  app.use(jsonBodyMiddleware);
  const express = app.getHttpAdapter().getInstance();
  express.disable('x-powered-by');
  express.set('etag', false);
  express.set('query parser', 'simple');
}
