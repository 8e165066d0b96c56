export { indexedOnly } from './indexed-only';
