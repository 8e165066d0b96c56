export * from './openapi.document';
export * from './docs.page';
