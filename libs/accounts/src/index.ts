export * from './account-directory';
