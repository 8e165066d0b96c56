export * from './openapi.document';
export * from './api-document';
