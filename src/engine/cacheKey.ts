import { hash } from 'node:crypto';
import { configSchema, type Config } from '../config/index.js';
import { canonicalJson } from '../graphql/index.js';

/** Where a request is for, as the key holds it (src/http/requestTarget.ts). */
export interface KeyedTarget {
  /** `:authority` as sent. */
  host: string;
  /** The configured endpoint: the path without its query string. */
  endpoint: string;
  /** The query string's parameters other than GraphQL's, as sent; '' when none. */
  parameters: string;
  /**
   * The headers keyed as sent (`keyedHeaders`: those an origin behind a proxy may build links with,
   * and `origin`), and what CSRF checks read of a request they may refuse; '' when none.
   */
  keyedHeaders: string;
}

/**
 * The cache key (docs/graphql-caching.md, Cache key): scope bucket, host, endpoint path, operation
 * name, normalised document (the SHA-256 of its printed text: selectOperation) and canonical variables (their literal text, canonicalVariables.ts),
 * then the other URL parameters, `extensions` but for those that change no answer, the keyed
 * headers, and a POST body's members other than GraphQL's, when a request has any of them.
 * `Accept` is not in it: a cacheable answer has the same body under both GraphQL JSON types, and a
 * HIT is answered in a type the client accepts (README, HIT, MISS, PASS).
 */
export function cacheKey(
  bucket: string,
  target: KeyedTarget,
  operationName: string,
  normalisedDocument: string,
  canonicalVariables: string,
  canonicalExtensions: string,
  otherMembers: string,
  tagging = '',
): string {
  // The parts are joined by NUL, which no part's text holds, so no surrogate pair is split or joined
  // by the joining. One-shot `hash` (Node 20.12) spares the Hash object: createHash, update and
  // digest were 3% of a GET HIT's CPU in a `--cpu-prof` profile (docs/performance.md).
  // The later parts are left out when empty: a plain request hashes the fewest bytes.
  const keyedParameters = target.parameters === '' && canonicalExtensions === '' ? '' : `\u0000${target.parameters}\u0000${canonicalExtensions}`;
  // The headers part is a NUL, a CR and its entries, each a NUL and a header name or `:` mark
  // (keyedHeaders); the members follow four NULs. No part's text holds a NUL, and none but the
  // headers part a CR (no header value, path or name can; JSON and printed strings escape it), so
  // the CR marks where the headers part starts, and a run of four NULs where the members do.
  const withHeaders = target.keyedHeaders === '' ? keyedParameters : `${keyedParameters}\u0000\r${target.keyedHeaders}`;
  const later = otherMembers === '' ? withHeaders : `${withHeaders}\u0000\u0000\u0000\u0000${otherMembers}`;
  const hashed = `${tagging}${target.host}\u0000${target.endpoint}\u0000${operationName}\u0000${normalisedDocument}\u0000${canonicalVariables}${later}`;
  return `${bucket}/${hash('sha256', hashed, 'base64url')}`;
}

/**
 * The part of a key that says how its entry was tagged, from the configuration (README, Hot reload).
 * An entry is tagged with the `keyFields` and `listArguments` in force when it is stored, and a
 * mutation computes its tags with those in force when it runs: after a reload that gives `Product`
 * a key field, its mutations name `Product:sku-1` where the entries stored before carry only the
 * type's tag, and those stayed stale until they expired. A key of its own leaves them unreachable.
 * '' under the defaults, so a configuration that sets neither keeps its keys; otherwise a CR, which
 * no host holds (the host starts every other key), the digest, and a NUL.
 */
export function taggingPart(config: Pick<Config, 'keyFields' | 'listArguments'>): string {
  let part = TAGGING_PARTS.get(config);
  if (part === undefined) {
    const text = taggingText(config);
    part = text === DEFAULT_TAGGING ? '' : `\r${hash('sha256', text, 'base64url')}\u0000`;
    TAGGING_PARTS.set(config, part);
  }
  return part;
}

const TAGGING_PARTS = new WeakMap<object, string>();

/** Keys sorted: the same settings written in another order tag alike, and keep the entries. */
function taggingText({ keyFields, listArguments }: Pick<Config, 'keyFields' | 'listArguments'>): string {
  return canonicalJson([keyFields, listArguments]);
}

const DEFAULT_TAGGING = taggingText(configSchema.parse({ origin: { url: 'http://origin.invalid/graphql' } }));
