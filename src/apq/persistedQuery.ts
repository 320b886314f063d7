import { createHash } from 'node:crypto';
import type { Config } from '../config/index.js';
import { graphQLErrorResponse, type HttpResponse } from '../http/index.js';
import type { RepeatedWarning } from '../observability/index.js';
import { errorMessage, isPlainObject } from '../util/index.js';
import type { PersistedQueryRegistry } from './registry.js';

/**
 * Automatic persisted queries, answered as Apollo Server answers them, since Apollo clients depend
 * on the exact messages, codes and statuses: a hash the registry does not know gets HTTP 200
 * `PersistedQueryNotFound` (the client then resends the query with its hash), never a 4xx or 5xx
 * that would send it into error handling or a retry loop.
 */

export type PersistedQueryResolution =
  /** The request carries no persisted query. */
  | { kind: 'none' }
  /**
   * The query text to run; `registration` when the request sent the text with its hash, to register
   * once the query is known good (`registerPersistedQuery`).
   */
  | { kind: 'resolved'; query: string; registration?: PersistedQueryRegistration }
  | { kind: 'refused'; response: HttpResponse; reason: PersistedQueryRefusal };

/** A hash and the query text it names, checked to match. */
export interface PersistedQueryRegistration {
  hash: string;
  query: string;
}

export type PersistedQueryRefusal = 'not-found' | 'not-supported' | 'bad-version' | 'bad-hash' | 'hash-mismatch' | 'bad-shape';

export interface PersistedQueryDependencies {
  apq: Config['apq'];
  registry: PersistedQueryRegistry;
  warnings: PersistedQueryWarnings;
}

/**
 * While the registry's store fails, every request naming a hash would log a line: any client can
 * send them, so they are logged as the store's own failures are (RepeatedWarning; README, Faults).
 */
export interface PersistedQueryWarnings {
  /** 'persisted query registry unavailable' */
  registryUnavailable: RepeatedWarning;
  /** 'persisted query not registered' */
  notRegistered: RepeatedWarning;
}

export async function resolvePersistedQuery(
  query: string | undefined,
  extensions: Record<string, unknown>,
  deps: PersistedQueryDependencies,
): Promise<PersistedQueryResolution> {
  if (!('persistedQuery' in extensions) || extensions.persistedQuery === null) return { kind: 'none' };
  const reference = extensions.persistedQuery;
  if (!deps.apq.enabled) return refused('not-supported');
  if (!isPlainObject(reference)) return refused('bad-shape');
  if (reference.version !== 1) return refused('bad-version');
  const hash = reference.sha256Hash;
  if (typeof hash !== 'string' || !SHA256_HEX.test(hash)) return refused('bad-hash');
  const normalisedHash = hash.toLowerCase();

  if (query === undefined) {
    let registered: string | undefined;
    try {
      registered = await deps.registry.get(normalisedHash);
    } catch (error) {
      // Not-found makes the client resend the full query, which is then served: better than a 500.
      deps.warnings.registryUnavailable.warn({ err: errorMessage(error) });
    }
    return registered === undefined ? refused('not-found') : { kind: 'resolved', query: registered };
  }

  if (createHash('sha256').update(query).digest('hex') !== normalisedHash) return refused('hash-mismatch');
  return { kind: 'resolved', query, registration: { hash: normalisedHash, query } };
}

/**
 * Registers a query only once it is known good: it parsed, passed the limits and the origin
 * answered it with 200 and `data`, as Apollo Server registers only valid documents (README,
 * Automatic persisted queries). Resolves to whether the registry took it; a registry failure is
 * logged, never the client's problem.
 */
export async function registerPersistedQuery(registration: PersistedQueryRegistration, deps: PersistedQueryDependencies): Promise<boolean> {
  try {
    await deps.registry.register(registration.hash, registration.query, deps.apq.ttl);
    return true;
  } catch (error) {
    deps.warnings.notRegistered.warn({ err: errorMessage(error) });
    return false;
  }
}

/** Apollo's answer for a hash it cannot serve; the client resends the query with it. */
export function persistedQueryNotFound(): HttpResponse {
  return REFUSALS['not-found']();
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** Apollo Server marks these two uncacheable so that the retry with the query is not answered from a cache. */
const NOT_CACHEABLE: Array<[string, string]> = [['cache-control', 'private, no-cache, must-revalidate']];

function refused(reason: PersistedQueryRefusal): PersistedQueryResolution {
  return { kind: 'refused', reason, response: REFUSALS[reason]() };
}

const REFUSALS: Record<PersistedQueryRefusal, () => HttpResponse> = {
  'not-found': () => graphQLErrorResponse(200, 'PersistedQueryNotFound', 'PERSISTED_QUERY_NOT_FOUND', NOT_CACHEABLE),
  'not-supported': () =>
    graphQLErrorResponse(200, 'PersistedQueryNotSupported', 'PERSISTED_QUERY_NOT_SUPPORTED', NOT_CACHEABLE),
  'bad-version': () => graphQLErrorResponse(400, 'Unsupported persisted query version', 'BAD_REQUEST'),
  'bad-hash': () =>
    graphQLErrorResponse(400, 'Invalid persisted query hash: expected 64 hexadecimal characters', 'BAD_REQUEST'),
  'hash-mismatch': () => graphQLErrorResponse(400, 'provided sha does not match query', 'BAD_REQUEST'),
  'bad-shape': () =>
    graphQLErrorResponse(400, 'Invalid persisted query: expected an object with version and sha256Hash', 'BAD_REQUEST'),
};
