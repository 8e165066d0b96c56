export * from './service-messages';
