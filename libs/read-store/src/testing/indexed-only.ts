import type { Collection, CollectionOptions, Doc, Filter, FindOptions, ReadStore } from '../read-store.port';

/**
 * A read store that, like MongoDB started with `notablescan`, refuses every query no declared
 * index serves: `find`, `count` and `claim` must filter on `id` or on a field that some caller
 * declared with `collection(name, { indexes })` (or that leads a compound index, as MongoDB's
 * prefix rule wants). Over the embedded SQLite store a missing index
 * costs nothing a test can see; over MongoDB it is a scan of the whole collection on every call.
 * For the specs of code that queries a read store: `new Thing(indexedOnly(reads))`.
 */
export function indexedOnly(store: ReadStore): ReadStore {
  const declared = new Map<string, Set<string>>();
  return Object.assign(Object.create(store) as ReadStore, {
    collection<T extends Doc>(name: string, options?: CollectionOptions): Collection<T> {
      const inner = store.collection<T>(name, options);
      const indexed = declared.get(name) ?? new Set(['id']);
      for (const spec of options?.indexes ?? []) indexed.add(typeof spec === 'string' ? spec : spec[0]);
      declared.set(name, indexed);
      const served = (operation: string, where: Filter): void => {
        const fields = Object.keys(where).filter((field) => where[field] !== undefined);
        if (!fields.some((field) => indexed.has(field))) {
          throw new Error(`${operation} on ${name} by ${JSON.stringify(fields)} is served by no index (declared: ${JSON.stringify([...indexed])})`);
        }
      };
      return Object.assign(Object.create(inner) as Collection<T>, {
        find: async (where: Filter, findOptions?: FindOptions) => (served('find', where), inner.find(where, findOptions)),
        count: async (where: Filter) => (served('count', where), inner.count(where)),
        claim: async (where: Filter, patch: Partial<T>, orderBy?: string) => (served('claim', where), inner.claim(where, patch, orderBy)),
        distinct: async (field: string, where: Filter, limit: number) => (served('distinct', where), inner.distinct(field, where, limit)),
      });
    },
  });
}
