import type { GraphQLError } from 'graphql';
import { ownedCopy } from '../util/index.js';

/**
 * What one purge request asks to invalidate. The purge schema's resolvers only add to it; the
 * request handler applies it to the store once every field has run, so several purge fields in one
 * mutation are confirmed together: one store call for the hard ones, one for the soft ones (`soft:
 * true`, marked stale instead of removed).
 */
export class PurgeTargets {
  /** The purge fields that ran, in order, by field name (not alias). */
  readonly fields: string[] = [];
  readonly hard = new Invalidation();
  readonly soft = new Invalidation();
  /** Argument values the schema cannot check (an unknown `_purgeType` type): nothing is applied. */
  readonly errors: GraphQLError[] = [];

  /** Each tag as a copy of its own: built from the purge's arguments, it would keep the purge's text alive (src/invalidation/tags.ts). */
  addTags(field: string, tags: Iterable<string>, soft: boolean): void {
    this.fields.push(field);
    const invalidation = soft ? this.soft : this.hard;
    for (const tag of tags) invalidation.tags.add(ownedCopy(tag));
  }

  addEverything(field: string, soft: boolean): void {
    this.fields.push(field);
    (soft ? this.soft : this.hard).everything = true;
  }

  reject(error: GraphQLError): void {
    this.errors.push(error);
  }
}

export class Invalidation {
  readonly tags = new Set<string>();
  /** `_purgeAll` ran: every entry, whatever the tags. */
  everything = false;
}
