export { indexedOnly } from './indexed-only';
export { sqliteQueryPlan } from './query-plan';
