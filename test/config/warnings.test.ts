import { describe, expect, it } from 'vitest';
import { configWarnings, parseConfig } from '../../src/config/index.js';

const parse = (scopes: string) => parseConfig(`origin:\n  url: http://origin.test/graphql\nscopes:\n${scopes}`, { source: 'config.yaml', env: {} });

const jwt = (name: string, extra = '') => `  ${name}:
    definition: header:authorization
    jwt:
      claim: org.id
      algorithms: [HS256]
      secret: warnings-test-secret-of-32-bytes
${extra}`;

describe('configWarnings', () => {
  it('names each JWT scope without an audience, and nothing else', () => {
    const config = parse(`  TEAM: header:x-team\n${jwt('USER')}${jwt('ORG', '      audience: api\n')}${jwt('ADMIN', '      issuer: https://auth.test\n')}`);
    expect(configWarnings(config)).toEqual([
      'scopes.USER.jwt.audience is not set: a token the same key signed for another audience (another API or client of the issuer) is accepted, and the bucket its org.id names is served to it without the origin seeing the request; set audience to the aud this API\'s tokens carry',
      'scopes.ADMIN.jwt.audience is not set: a token the same key signed for another audience (another API or client of the issuer) is accepted, and the bucket its org.id names is served to it without the origin seeing the request; set audience to the aud this API\'s tokens carry',
    ]);
  });

  it('names each JWT secret shorter than the key its HMAC algorithms need', () => {
    const scope = (name: string, algorithms: string, secret: string) =>
      `  ${name}:\n    definition: header:authorization\n    jwt:\n      claim: sub\n      algorithms: [${algorithms}]\n      secret: ${secret}\n      audience: api\n`;
    const config = parse(`${scope('A', 'HS256', 'x')}${scope('B', 'HS256, HS512', 'k'.repeat(32))}${scope('C', 'HS384', 'k'.repeat(48))}`);
    expect(configWarnings(config)).toEqual([
      'scopes.A.jwt.secret is 1 bytes, shorter than the 32 HS256 needs (RFC 7518, section 3.2): a key that short can be guessed from any token, and tokens for any bucket forged with it',
      'scopes.B.jwt.secret is 32 bytes, shorter than the 64 HS512 needs (RFC 7518, section 3.2): a key that short can be guessed from any token, and tokens for any bucket forged with it',
    ]);
  });

  it('names each scope cookie Python\'s SimpleCookie reads as an attribute, since every request sending it passes', () => {
    expect(configWarnings(parse('  APP: header:x-app|cookie:Version\n  LOCALE: cookie:locale\n'))).toEqual([
      "scopes.APP reads the cookie Version, which Python's SimpleCookie reads as an attribute of the cookie before it, not as a cookie: every request that sends it passes uncached (README, Scopes); name the cookie otherwise",
    ]);
  });

  it('says schema.refreshSeconds does nothing beside schema.file', () => {
    const config = parseConfig('origin:\n  url: http://origin.test/graphql\nschema:\n  file: origin.graphql\n  refreshSeconds: 60\n', { source: 'config.yaml', env: {} });
    expect(configWarnings(config)).toEqual(['schema.refreshSeconds has no effect with schema.file: svc-cache introspects nothing, and reads the file again whenever it changes']);
  });

  it('says that of a type\'s several key fields only the first identifies it, as a Stellate user may list several to purge by each', () => {
    const config = parseConfig('origin:\n  url: http://origin.test/graphql\nkeyFields:\n  types:\n    User: [id, email, handle]\n    Product: [sku]\n', { source: 'config.yaml', env: {} });
    expect(configWarnings(config)).toEqual([
      "keyFields.types.User lists id, email, handle: a User is identified by one key field, the first of them its type has in the schema; only that one tags its objects and names purgeUser's argument, and a purge by another fails validation",
    ]);
  });

  // The new-user audit: an origin on /api/graphql with endpoints left at ["/graphql"] cached nothing, silently.
  it("says when origin.url's path is not among the endpoints, so every request to it would pass", () => {
    const at = (url: string, endpoints = '') => configWarnings(parseConfig(`origin:\n  url: ${url}\n${endpoints}`, { source: 'config.yaml', env: {} }));
    expect(at('http://origin.test/api/graphql')).toEqual([
      "origin.url's path /api/graphql is not in endpoints (/graphql): requests to it pass uncached (PASS not-an-endpoint); list it in endpoints, unless Envoy rewrites the path clients use to it",
    ]);
    expect(at('http://origin.test/api/graphql?x=1', 'endpoints: [/graphql, /api/graphql]\n')).toEqual([]);
    expect(at('http://origin.test:4000/graphql')).toEqual([]);
  });

  it('has none for scopes on headers and cookies alone', () => {
    expect(configWarnings(parse('  TEAM: header:x-team\n  SESSION: cookie:session\n'))).toEqual([]);
  });
});
