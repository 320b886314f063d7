import { endpointOf, isCookieAttributeName } from '../http/index.js';
import type { Config } from './schema.js';
import { definitionOf, scopeSources } from './scopeSources.js';

/**
 * What a configuration leaves open that it may not mean to: it loads and runs, but an operator
 * should hear of it. `check` prints each warning and `serve` logs it at start and after each reload
 * (README, Commands).
 */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  for (const [name, scope] of Object.entries(config.scopes)) {
    const cookies = scopeSources(definitionOf(scope)).flatMap((source) => (source.kind === 'cookie' ? [source.name] : []));
    for (const cookie of cookies.filter(isCookieAttributeName)) {
      warnings.push(
        `scopes.${name} reads the cookie ${cookie}, which Python's SimpleCookie reads as an attribute of the cookie before it, not as a cookie: every request that sends it passes uncached (README, Scopes); name the cookie otherwise`,
      );
    }
    if (typeof scope === 'string') continue;
    const shortFor = scope.jwt.secret === undefined ? undefined : hmacKeyTooShortFor(scope.jwt.secret, scope.jwt.algorithms);
    if (shortFor !== undefined) {
      // RFC 7518, section 3.2: a shorter key can be found from any one token by guessing offline,
      // and with it every token of every bucket forged.
      warnings.push(
        `scopes.${name}.jwt.secret is ${Buffer.byteLength(scope.jwt.secret!)} bytes, shorter than the ${shortFor.bytes} ${shortFor.algorithm} needs (RFC 7518, section 3.2): a key that short can be guessed from any token, and tokens for any bucket forged with it`,
      );
    }
    if (scope.jwt.audience !== undefined) continue;
    // A token is checked for its issuer's signature, not for whom it was issued: a token the same
    // key signed for another API names a bucket here and is served what that user's bucket holds,
    // without the origin, which would refuse it, ever seeing it (README, JWT-claim scopes).
    warnings.push(
      `scopes.${name}.jwt.audience is not set: a token the same key signed for another audience (another API or client of the issuer) is accepted, and the bucket its ${scope.jwt.claim} names is served to it without the origin seeing the request; set audience to the aud this API's tokens carry`,
    );
  }
  for (const [type, fields] of Object.entries(config.keyFields.types)) {
    if (fields.length < 2) continue;
    // Stellate makes each listed key field a purge argument; svc-cache keys an object by one field
    // (README, Every key), so a purge job by the others would fail validation.
    warnings.push(
      `keyFields.types.${type} lists ${fields.join(', ')}: a ${type} is identified by one key field, the first of them its type has in the schema; only that one tags its objects and names purge${type}'s argument, and a purge by another fails validation`,
    );
  }
  const originPath = new URL(config.origin.url).pathname;
  if (endpointOf(originPath, config.endpoints) === undefined) {
    // A new user's mistake (an origin on /api/graphql, `endpoints` left at its default): nothing is
    // cached, and every request passes as `not-an-endpoint` (README, HIT, MISS, PASS).
    warnings.push(
      `origin.url's path ${originPath} is not in endpoints (${config.endpoints.join(', ')}): requests to it pass uncached (PASS not-an-endpoint); list it in endpoints, unless Envoy rewrites the path clients use to it`,
    );
  }
  if (config.schema?.file !== undefined && config.schema.refreshSeconds !== undefined) {
    warnings.push('schema.refreshSeconds has no effect with schema.file: svc-cache introspects nothing, and reads the file again whenever it changes');
  }
  return warnings;
}

/** The bytes each HMAC algorithm's key needs at least: its hash's output (RFC 7518, section 3.2). */
const HMAC_KEY_BYTES: Readonly<Record<string, number>> = { HS256: 32, HS384: 48, HS512: 64 };

/** The most demanding listed HMAC algorithm `secret` is too short for, if any. */
function hmacKeyTooShortFor(secret: string, algorithms: readonly string[]): { algorithm: string; bytes: number } | undefined {
  const length = Buffer.byteLength(secret);
  const needs = algorithms.flatMap((algorithm) => (HMAC_KEY_BYTES[algorithm] === undefined ? [] : [{ algorithm, bytes: HMAC_KEY_BYTES[algorithm]! }]));
  const most = needs.sort((a, b) => b.bytes - a.bytes)[0];
  return most !== undefined && length < most.bytes ? most : undefined;
}
