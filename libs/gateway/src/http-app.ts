import { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { jsonBodyMiddleware } from './http/json-body.middleware';
import { LaunchFastPath } from './http/launch-fast-path';
import { LaunchRoute } from './http/launch-route';
import { RateLimitMiddleware } from './http/rate-limit.middleware';
import { trustedProxies } from './http/trusted-proxies';
import { requestIdMiddleware } from './http/request-id.middleware';
import { ApiDocument } from './openapi/api-document';
import { buildOpenApiDocument } from './openapi/openapi.document';

/** Swagger UI loads its own scripts and styles from this origin (swagger-ui-dist), nothing else. */
const DOCS_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'";

/**
 * The express settings of an app that serves the API: request ids first, then the rate limit
 * (every answer carries its headers; a refused request costs no body), then the body reader
 * (before routing, so an oversized or malformed body is refused before any work), then the
 * launch's own way in (LaunchRoute: a valid launch skips Nest's router). Before express, on the
 * app's server, LaunchFastPath answers the launches that need none of express (the same steps on
 * node's request and response). The OpenAPI document is read from the controllers once, here,
 * and shown by Swagger UI at /docs.
 */
export function configureHttp(app: INestApplication): void {
  app.use(requestIdMiddleware);
  app.use(app.get(RateLimitMiddleware).handle);
  app.use(jsonBodyMiddleware);
  app.use(app.get(LaunchRoute).handle);
  app.get(LaunchFastPath).install(app.getHttpServer());
  const express = app.getHttpAdapter().getInstance();
  express.disable('x-powered-by');
  // Whose X-Forwarded-For names the client (TRUST_PROXY): the address a request without a key is limited as.
  express.set('trust proxy', trustedProxies(app.get<ServiceConfig>(CONFIG).trustProxy));
  express.set('etag', false);
  express.set('query parser', 'simple');

  const document = buildOpenApiDocument(app, app.get<ServiceConfig>(CONFIG).version);
  app.get(ApiDocument).load(document);
  app.use('/docs', (_request: Request, response: Response, next: NextFunction) => {
    response.setHeader('Content-Security-Policy', DOCS_POLICY);
    next();
  });
  SwaggerModule.setup('docs', app, document as never, { raw: false, customSiteTitle: 'Campaign Operations API', customfavIcon: '/docs/favicon-32x32.png' });
}
