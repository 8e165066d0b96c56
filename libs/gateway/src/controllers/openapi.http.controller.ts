import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { CONFIG, ServiceConfig } from '@campaign-ops/service-runtime';
import { buildOpenApiDocument, renderDocsPage } from '../openapi';

/**
 * The API's own description, public and outside the envelope: the OpenAPI document built from the
 * route table once at start, and the same rendered as HTML.
 */
@Controller()
export class OpenApiController {
  private readonly document: string;
  private readonly page: string;

  constructor(@Inject(CONFIG) config: ServiceConfig) {
    const document = buildOpenApiDocument(config.version);
    this.document = JSON.stringify(document);
    this.page = renderDocsPage(document);
  }

  @Get('openapi.json')
  openapi(@Res() response: Response): void {
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.send(this.document);
  }

  @Get('docs')
  docs(@Res() response: Response): void {
    response.setHeader('Content-Type', 'text/html; charset=utf-8');
    // Nothing on the page loads anything: no scripts, only its own inline styles.
    response.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'");
    response.send(this.page);
  }
}
