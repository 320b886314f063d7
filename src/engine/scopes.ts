import { createHmac, createPublicKey, hash } from 'node:crypto';
import { definitionOf, scopeSources, type ScopeConfig, type ScopeSource } from '../config/index.js';
import { cookieReadOtherwise, cookieValues, headerSpeltOtherwise, headerValues, sendsOnlyCookies, type HeaderList } from '../http/index.js';

/**
 * Scope buckets (docs/graphql-caching.md, Scopes). Each distinct key value is its own bucket. The bucket
 * is identified by a keyed hash of the values, so raw tokens and cookies never reach memory beyond
 * the request, the store or the logs. A JWT scope puts in the digest of its verified claim instead
 * of the token (src/engine/jwtScopes.ts).
 */

export const PUBLIC_SCOPE = 'PUBLIC';

export type ScopeDefinitions = Readonly<Record<string, ScopeConfig>>;

/**
 * The bucket a request falls in for the given scopes. An absent value and an empty one are told
 * apart; a header sent twice counts with both values in order; header names are case-insensitive
 * (Envoy lower-cases them), cookie names are not (RFC 6265). A JWT scope counts with its verified
 * claim's digest from `jwtIdentities`, or as absent when the request sent no token.
 */
export function scopeBucketKey(
  scopes: readonly string[],
  definitions: ScopeDefinitions,
  headers: HeaderList,
  secret: Buffer,
  jwtIdentities: ReadonlyMap<string, string | undefined>,
): string {
  if (scopes.length === 0) return PUBLIC_SCOPE;
  // The parts are joined and hashed in one update: each update is a call into OpenSSL. With the
  // sources parsed once (sourcesOf), one header scope's key takes 1.6 µs in a loop, against 2.0 with
  // an update per part; the bytes hashed are the same, so are the keys (a test pins two).
  let message = '';
  for (const scope of scopes) {
    message += `${scope}\u0000${readingOf(definitions, scope).definitionDigest}\u0000`;
    if (jwtIdentities.has(scope)) {
      const identity = jwtIdentities.get(scope);
      message += identity === undefined ? '\u0001absent\u0000' : `\u0003jwt:${identity}\u0000`;
      continue;
    }
    for (const source of sourcesOf(definitions, scope)) {
      const value = sourceValue(source, headers);
      message += value === undefined ? '\u0001absent\u0000' : `\u0002${value.length}:${value}\u0000`;
    }
  }
  return `${scopes.join('+')}:${createHmac('sha256', secret).update(message).digest('base64url')}`;
}

/** A scope's sources, parsed once per config's scope definitions rather than on every request. */
export function sourcesOf(definitions: ScopeDefinitions, scope: string): readonly ScopeSource[] {
  return readingOf(definitions, scope).sources;
}

/**
 * A scope's sources, and a digest of what makes its values name someone: the bucket holds it, so
 * that a scope defined otherwise after a reload (another header or cookie, another JWT claim,
 * issuer, audience or key) starts with buckets of its own. The buckets of its old definition held
 * other people's answers under the same values: `sub: 42` of another claim or issuer is another
 * person (README, Hot reload). Nothing else is in it (algorithms, clock tolerance, how the
 * definition is spelt), so such a change, or a setting a later version adds, keeps the entries.
 */
function readingOf(definitions: ScopeDefinitions, scope: string): ScopeReading {
  let byScope = readingsByDefinitions.get(definitions);
  if (byScope === undefined) {
    byScope = new Map();
    readingsByDefinitions.set(definitions, byScope);
  }
  let reading = byScope.get(scope);
  if (reading === undefined) {
    const definition = definitions[scope];
    const sources = scopeSources(definitionOf(definition));
    reading = { sources, definitionDigest: hash('sha256', JSON.stringify(identifyingParts(sources, definition)), 'base64url') };
    byScope.set(scope, reading);
  }
  return reading;
}

/**
 * The sources a scope reads, and every JWT setting but those known to name no one (the algorithms
 * accepted, the clock tolerance): its claim, issuer, audience, key source, and any setting a later
 * version adds, which then starts new buckets rather than risk sharing old ones. A secret counts by
 * its digest, a public key by its DER, so neither its spelling nor its line breaks do.
 */
function identifyingParts(sources: readonly ScopeSource[], definition: ScopeConfig | undefined): unknown[] {
  const read = sources.map((source) => `${source.kind}:${source.name}`);
  if (definition === undefined || typeof definition === 'string') return [read];
  const { algorithms: _algorithms, clockToleranceSeconds: _clockTolerance, secret, publicKey, ...named } = definition.jwt;
  return [
    read,
    named,
    secret === undefined ? null : hash('sha256', secret, 'base64url'),
    publicKey === undefined ? null : createPublicKey(publicKey).export({ type: 'spki', format: 'der' }).toString('base64url'),
  ];
}

interface ScopeReading {
  sources: readonly ScopeSource[];
  definitionDigest: string;
}

const readingsByDefinitions = new WeakMap<ScopeDefinitions, Map<string, ScopeReading>>();

/**
 * True when a request carrying `credentials` (the credential headers it sent: `authorization`,
 * `proxy-authorization`, `cookie`) falls, for one of the scopes at least, in that scope's share of
 * "no value" (none of its sources sent with a value: an empty one, such as the `authorization: ""`
 * of Apollo's documented auth link without a token, is shared by every client that sends it too),
 * and the scopes do not read all of those credentials: that part of the bucket is shared by every
 * such request (every user of one tenant, under TENANT+USER), while the origin may answer for whom
 * the credentials name, so the answer is no more shareable than a PUBLIC one (README, Scopes). A
 * cookie scope reads its cookies only: a `cookie` header with any other cookie (a "remember me"
 * cookie beside the session one) is a credential it does not read.
 */
export function sharedBucketDespite(
  credentials: readonly string[],
  scopes: readonly string[],
  definitions: ScopeDefinitions,
  headers: HeaderList,
): boolean {
  const someScopeWithoutValue = scopes.some((scope) =>
    sourcesOf(definitions, scope).every((source) => {
      const value = sourceValue(source, headers);
      return value === undefined || isBlank(value);
    }),
  );
  if (!someScopeWithoutValue) return false;
  const { readHeaders, readCookies } = readBy(definitions, scopes);
  const unread = (name: string): boolean =>
    name === 'cookie' ? readCookies.size === 0 || !sendsOnlyCookies(headers, readCookies) : !readHeaders.has(name);
  return credentials.some(unread);
}

/** The headers and cookies `scopes` read, worked out once per config and list of scopes. */
function readBy(definitions: ScopeDefinitions, scopes: readonly string[]): { readHeaders: ReadonlySet<string>; readCookies: ReadonlySet<string> } {
  let byScopes = readByDefinitions.get(definitions);
  if (byScopes === undefined) {
    byScopes = new Map();
    readByDefinitions.set(definitions, byScopes);
  }
  const listed = scopes.join('+');
  let read = byScopes.get(listed);
  if (read === undefined) {
    const readHeaders = new Set<string>();
    const readCookies = new Set<string>();
    for (const scope of scopes) {
      for (const source of sourcesOf(definitions, scope)) (source.kind === 'header' ? readHeaders : readCookies).add(source.name);
    }
    read = { readHeaders, readCookies };
    byScopes.set(listed, read);
  }
  return read;
}

const readByDefinitions = new WeakMap<ScopeDefinitions, Map<string, { readHeaders: ReadonlySet<string>; readCookies: ReadonlySet<string> }>>();

/**
 * Whether every client may send a source's value: each of a header's repeated values (sourceValue)
 * empty or whitespace, a cookie's `""`, or a placeholder a client sends without a token of its own:
 * a bare auth scheme (`Bearer`), what a template makes of a missing token (JavaScript's `null`,
 * `undefined`, `[object Object]`, `[object Promise]` of a getter never awaited, Python's `None`,
 * Go's `<nil>` and `nil`), or a template left unfilled (`%s`, `%(token)s`, `${token}`, `$TOKEN`,
 * `{token}`, `{{token}}`, `<token>`, `#{token}`), under any scheme or none. (A short credential is
 * not taken for one: the demo's own tokens are `Bearer alice` and `Bearer bob`.)
 */
function isBlank(value: string): boolean {
  if (!value.includes(REPEAT_SEPARATOR)) return PLACEHOLDER.test(value.trim());
  return value.split(REPEAT_SEPARATOR).every((part) => PLACEHOLDER.test(part.trim()));
}

/** Matched against a trimmed value: no two runs of whitespace meet, so the test is linear in its length. */
const PLACEHOLDER =
  /^(?:(?:bearer|basic|token|jwt)|(?:[a-z][\w.+-]*\s+)?(?:null|undefined|none|nil|<nil>|false|nan|\[object \w+\]|""|''|%[sv]|%\(\w+\)s|\$\w+|[$#]?\{[^{}]*\}|\{\{[^{}]*\}\}|<[\w-]+>))?$/i;

/**
 * The first source of the scopes (JWT scopes included) whose value some origin may read otherwise
 * than svc-cache keys it, or undefined. Such a request passes (README, Scopes):
 * - a cookie sent more than once with values that differ, or that some origin may read otherwise
 *   (`Locale=`, `a=1,locale=`, `l%6Fcale=`: cookieReadOtherwise). Which one the origin reads is then
 *   its parser's choice (of repeats, the first in Node's `cookie`, the last in Python's
 *   SimpleCookie, Django, Tornado), so no bucket can be said to hold its answer. Identical repeats
 *   are one value;
 * - a header sent under a name that CGI-style origins read as the source's (`x_team` beside or
 *   instead of `x-team`: headerSpeltOtherwise), which svc-cache would key as absent or as another
 *   value. A header sent on several lines is keyed with all its values.
 */
export function ambiguousScopeSource(scopes: readonly string[], definitions: ScopeDefinitions, headers: HeaderList): string | undefined {
  for (const scope of scopes) {
    for (const source of sourcesOf(definitions, scope)) {
      if (source.kind === 'header') {
        if (headerSpeltOtherwise(headers, source.name)) return `${scope}: header ${source.name}`;
        continue;
      }
      const values = cookieValues(headers, source.name);
      if (values.some((value) => value !== values[0]) || cookieReadOtherwise(headers, source.name)) return `${scope}: cookie ${source.name}`;
    }
  }
  return undefined;
}

/** Names of the request headers the scopes read, for `vary` on cached answers. */
export function scopeVaryHeaders(scopes: readonly string[], definitions: ScopeDefinitions): string[] {
  const names = new Set<string>();
  for (const scope of scopes) {
    for (const source of sourcesOf(definitions, scope)) names.add(source.kind === 'header' ? source.name : 'cookie');
  }
  return [...names].sort();
}

/**
 * Names of the request headers whose whole value the scopes put in the key: header-sourced ones.
 * A cookie-sourced scope keys one cookie, not the `cookie` header, so it does not satisfy an
 * origin's `Vary: Cookie` (docs/graphql-caching.md, Cacheability). A JWT scope on a header counts
 * as keying it: its verified claim names the principal the origin answers for, so two tokens of
 * one principal are one answer (README, Scopes).
 */
export function scopeKeyedHeaders(scopes: readonly string[], definitions: ScopeDefinitions): string[] {
  const names = new Set<string>();
  for (const scope of scopes) {
    for (const source of sourcesOf(definitions, scope)) if (source.kind === 'header') names.add(source.name);
  }
  return [...names];
}

/** A source's value; a cookie's occurrences all agree here (ambiguousScopeSource passed the others). */
function sourceValue(source: ScopeSource, headers: HeaderList): string | undefined {
  if (source.kind === 'cookie') return cookieValues(headers, source.name)[0];
  const values = headerValues(headers, source.name);
  return values.length === 0 ? undefined : values.join(REPEAT_SEPARATOR);
}

/** Joins a header's repeated values in a source's value: no header value holds a NUL. */
const REPEAT_SEPARATOR = '\u0000';
