import { RawResponse } from './schema';

// HealthResponse and ReadinessResponse: libs/service-runtime/src/health.responses.ts (that library may not depend on this one).

@RawResponse({ type: 'object', description: 'This OpenAPI 3.1 document, generated from the route table.' })
export class OpenApiDocumentResponse {}

@RawResponse({ type: 'string', description: 'This document as a self-contained HTML page.' })
export class DocsPageResponse {}
