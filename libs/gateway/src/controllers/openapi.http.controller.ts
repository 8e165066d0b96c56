import { Controller, Get, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { ApiDocument } from '../openapi/api-document';
import { OpenApiDocumentResponse } from '@campaign-ops/api-contract';

/** The API's own description, public and outside the envelope (its HTML page is Swagger UI's, at /docs). */
@ApiTags('Operations')
@Controller()
export class OpenApiController {
  constructor(private readonly document: ApiDocument) {}

  @Get('openapi.json')
  @ApiOperation({ operationId: 'getOpenApiDocument', summary: 'This OpenAPI document' })
  @ApiAnswer(OpenApiDocumentResponse, { raw: 'application/json' })
  openapi(@Res() response: Response): void {
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.send(this.document.json);
  }
}
