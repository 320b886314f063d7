/**
 * Invalidation tags: what a stored response holds, in the terms invalidations are asked in.
 * Every producer (responses, mutations, purges) names tags through these functions, so a purge
 * and the entries it must clear always agree on spelling.
 */
export const invalidationTag = {
  /** An object identified by `__typename` and its key field's value. */
  entity: (type: string, key: string): string => `e:${type}:${key}`,
  /**
   * An object of an entity type whose key the answer does not hold (a stored document, which goes
   * to the origin without added key fields, that selects none): whatever names an entity of the
   * type names it too, since it may be that entity.
   */
  unkeyed: (type: string): string => `u:${type}`,
  /** Any object of the type (or a place where one could have been: a null field, an empty list). */
  type: (type: string): string => `t:${type}`,
  /** A list that holds (or could hold) objects of the type. */
  list: (type: string): string => `l:${type}`,
  /**
   * A list field (`Parent.field`) that can hold objects of the type, with the values of the
   * arguments that narrow it for that type (canonical JSON, hashed when long; see listArguments.ts).
   */
  listField: (type: string, coordinate: string, narrowed: string): string => `l:${type}:${coordinate}:${narrowed}`,
  /** A root query field. */
  query: (field: string): string => `q:${field}`,
  /** An operation name. */
  operation: (name: string): string => `o:${name}`,
  /** A scope bucket. */
  bucket: (bucket: string): string => `b:${bucket}`,
} as const;
