export * from './api-errors';
