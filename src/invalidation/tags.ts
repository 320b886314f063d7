import { hash } from 'node:crypto';
import { ownedCopy } from '../util/index.js';

/**
 * Invalidation tags: what a stored response holds, in the terms invalidations are asked in.
 * Every producer (responses, mutations, purges) names tags through these functions, so a purge
 * and the entries it must clear always agree on spelling.
 *
 * Stores and indexes keep tags long after the request, and a tag built from a name cut out of the
 * query text would keep that whole text alive (src/util/ownedCopy.ts): the tags made of the
 * document's names (root fields, the operation, a list field's arguments) are copies of their own.
 * The others are made of the schema's names and of keys, which JSON.parse gives as strings of their
 * own; a key read from a document is copied by whoever reads it (keyedLookups.ts; a purge copies
 * every tag it names, src/purge/targets.ts). And each tag is at most MAX_TAG_CHARACTERS long: what
 * bounds a store's invalidation records and the pending invalidations in entries then bounds them in
 * bytes too, whatever key an answer holds or name a client gives its operation.
 */
export const invalidationTag = {
  /** An object identified by `__typename` and its key field's value. */
  entity: (type: string, key: string): string => bounded(`e:${type}:${key}`),
  /**
   * An object of an entity type whose key the answer does not hold (a stored document, which goes
   * to the origin without added key fields, that selects none): whatever names an entity of the
   * type names it too, since it may be that entity.
   */
  unkeyed: (type: string): string => bounded(`u:${type}`),
  /** Any object of the type (or a place where one could have been: a null field, an empty list). */
  type: (type: string): string => bounded(`t:${type}`),
  /** A list that holds (or could hold) objects of the type. */
  list: (type: string): string => bounded(`l:${type}`),
  /**
   * A list field (`Parent.field`) that can hold objects of the type, with the values of the
   * arguments that narrow it for that type (canonical JSON, hashed when long; see listArguments.ts).
   */
  listField: (type: string, coordinate: string, narrowed: string): string => owned(`l:${type}:${coordinate}:${narrowed}`),
  /** A root query field. */
  query: (field: string): string => owned(`q:${field}`),
  /** An operation name. */
  operation: (name: string): string => owned(`o:${name}`),
  /** A scope bucket. */
  bucket: (bucket: string): string => bounded(`b:${bucket}`),
} as const;

/** Past this length a tag is spelt by its kind and a SHA-256 of the whole tag. */
export const MAX_TAG_CHARACTERS = 256;

function bounded(tag: string): string {
  return tag.length <= MAX_TAG_CHARACTERS ? tag : hashed(tag);
}

/** `bounded`, and a copy of its own when kept whole. */
function owned(tag: string): string {
  return tag.length <= MAX_TAG_CHARACTERS ? ownedCopy(tag) : hashed(tag);
}

function hashed(tag: string): string {
  return `${tag.slice(0, 2)}#${hash('sha256', tag, 'base64url')}`;
}
