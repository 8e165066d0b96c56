import { Injectable } from '@nestjs/common';
import type { OpenApiDocument } from './openapi.document';

/**
 * The OpenAPI document of the running gateway, built once at start from its controllers
 * (http-app.ts), and the route table it is: which methods a path allows, for 405 answers with
 * `Allow` and for the rate limit's choice of bucket.
 */
@Injectable()
export class ApiDocument {
  private routes: { method: string; segments: string[] }[] = [];
  json = '{}';

  load(document: OpenApiDocument): void {
    this.json = JSON.stringify(document);
    this.routes = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => ({ method: method.toUpperCase(), segments: path.split('/') })),
    );
  }

  /** The methods a path allows, empty when no route has this path. */
  allowedMethods(path: string): string[] {
    const segments = path.replace(/\/+$/, '').split('/');
    return this.routes
      .filter(
        (route) =>
          route.segments.length === segments.length &&
          route.segments.every((segment, i) => (segment.startsWith('{') ? segments[i] !== '' : segment === segments[i])),
      )
      .map((route) => route.method);
  }
}
