import type { Doc } from './read-store.port';

export function assertRevision(revision: number): number {
  if (!Number.isSafeInteger(revision)) throw new TypeError(`revision must be an integer, got ${String(revision)}`);
  return revision;
}

export function assertDocument(doc: Doc): Doc {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new TypeError('a document must be an object');
  if (typeof doc.id !== 'string' || doc.id === '') throw new TypeError('a document needs a non-empty string id');
  return doc;
}
