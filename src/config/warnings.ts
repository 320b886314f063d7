import { isCookieAttributeName } from '../http/index.js';
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
    if (typeof scope === 'string' || scope.jwt.audience !== undefined) continue;
    // A token is checked for its issuer's signature, not for whom it was issued: a token the same
    // key signed for another API names a bucket here and is served what that user's bucket holds,
    // without the origin, which would refuse it, ever seeing it (README, JWT-claim scopes).
    warnings.push(
      `scopes.${name}.jwt.audience is not set: a token the same key signed for another audience (another API or client of the issuer) is accepted, and the bucket its ${scope.jwt.claim} names is served to it without the origin seeing the request; set audience to the aud this API's tokens carry`,
    );
  }
  if (config.schema?.file !== undefined && config.schema.refreshSeconds !== undefined) {
    warnings.push('schema.refreshSeconds has no effect with schema.file: svc-cache introspects nothing, and reads the file again whenever it changes');
  }
  return warnings;
}
