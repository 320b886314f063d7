import type { OperationDefinitionNode } from 'graphql';
import { Kind } from 'graphql';
import type { Config } from '../config/index.js';
import { headerValue, type HeaderList } from '../http/index.js';
import { isPurgeToken } from './token.js';

/** Telling a purge apart before the purge schema exists (docs/graphql-caching.md, Purge API). */

/** The header carrying the purge token, lower-cased as Envoy hands header names over. */
export function purgeTokenHeader(purge: Config['purge']): string {
  return purge.header.toLowerCase();
}

/** Whether the request carries the purge token header at all, valid or not. */
export function carriesPurgeToken(headers: HeaderList, purge: Config['purge']): boolean {
  return headerValue(headers, purgeTokenHeader(purge)) !== undefined;
}

/** Whether the request carries one of the configured purge tokens. */
export function hasValidPurgeToken(headers: HeaderList, purge: Config['purge']): boolean {
  return isPurgeToken(headerValue(headers, purgeTokenHeader(purge)), purge.tokens);
}

/**
 * Without the origin schema there is no purge schema to tell purges from origin mutations: a
 * mutation whose root fields are all named like purge fields is taken for a purge.
 */
export function looksLikePurge(operation: OperationDefinitionNode): boolean {
  return operation.selectionSet.selections.every(
    (selection) => selection.kind === Kind.FIELD && /^_?purge/.test(selection.name.value),
  );
}
