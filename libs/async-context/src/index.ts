export { ContextKey } from './async-context';
