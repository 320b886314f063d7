import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/index.js';

/** The keys of the sidecar's own network: `endpoints`, `grpc.tls` and the header names it reads. */

const ORIGIN = 'origin:\n  url: http://origin.test/graphql\n';
const parse = (text: string) => parseConfig(text, { source: 'config.yaml', env: {} });
const problems = (text: string): readonly string[] => {
  try {
    parse(text);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
};

describe('endpoints', () => {
  it('defaults to /graphql', () => {
    expect(parse(ORIGIN).endpoints).toEqual(['/graphql']);
  });

  it('takes a list of paths', () => {
    expect(parse(`${ORIGIN}endpoints: [/graphql, /t/acme/graphql]\n`).endpoints).toEqual(['/graphql', '/t/acme/graphql']);
  });

  it('refuses a path without its leading slash, and an empty list', () => {
    expect(problems(`${ORIGIN}endpoints: [graphql]\n`)).toEqual([
      'config.yaml: endpoints[0]: expected a path starting with "/", got "graphql" (line 3)',
    ]);
    expect(problems(`${ORIGIN}endpoints: []\n`).join('\n')).toMatch(/^config\.yaml: endpoints: /);
  });

  it('refuses a path no request could match: requests are matched on their path alone, without the query string', () => {
    expect(problems(`${ORIGIN}endpoints: ["/graphql?x=1", "/graphql#top", "/graph ql", "/%zz", "/t/acme/graphql"]\n`)).toEqual([
      'config.yaml: endpoints[0]: expected a path without a query string or fragment ("?", "#"): requests are matched on their path alone, got "/graphql?x=1" (line 3)',
      'config.yaml: endpoints[1]: expected a path without a query string or fragment ("?", "#"): requests are matched on their path alone, got "/graphql#top" (line 3)',
      `config.yaml: endpoints[2]: expected a path of URL characters: letters, digits, -._~!$&'()*+,;=:@/ and %XX escapes, got "/graph ql" (line 3)`,
      `config.yaml: endpoints[3]: expected a path of URL characters: letters, digits, -._~!$&'()*+,;=:@/ and %XX escapes, got "/%zz" (line 3)`,
    ]);
  });

  it("takes any path of URL characters, as a request's :path writes it", () => {
    const paths = ['/', "/api/v1;x=1/graph-ql_~.!$&'()*+,=:@", '/%67raphql'];
    expect(parse(`${ORIGIN}endpoints: ${JSON.stringify(paths)}\n`).endpoints).toEqual(paths);
  });
});

describe('grpc.tls', () => {
  it('is absent by default: clear text on the pod loopback', () => {
    expect(parse(ORIGIN).grpc).toBeUndefined();
  });

  it('takes the certificate, key and client CA file names', () => {
    const config = parse(`${ORIGIN}grpc:\n  tls: { cert: /tls/tls.crt, key: /tls/tls.key, clientCa: /tls/ca.crt }\n`);
    expect(config.grpc?.tls).toEqual({ cert: '/tls/tls.crt', key: '/tls/tls.key', clientCa: '/tls/ca.crt' });
  });

  it('refuses TLS without a client CA: every client must present a certificate', () => {
    expect(problems(`${ORIGIN}grpc:\n  tls: { cert: /tls/tls.crt, key: /tls/tls.key }\n`).join('\n')).toMatch(/grpc\.tls\.clientCa/);
  });
});

describe('header names: purge.header and cache.bypassCacheHeaders', () => {
  it('takes any RFC 9110 token, and lower-cases the bypass names once, as request header names are read', () => {
    const config = parse(`${ORIGIN}purge:\n  header: X-Purge_Token.v2\ncache:\n  bypassCacheHeaders: [x-no-cache, "X-Debug!"]\n`);
    expect(config.purge.header).toBe('X-Purge_Token.v2');
    expect(config.cache.bypassCacheHeaders).toEqual(['x-no-cache', 'x-debug!']);
  });

  it('refuses a name no request header can have', () => {
    const token = "expected a header name: letters, digits and !#$%&'*+-.^_`|~ (an RFC 9110 token)";
    expect(problems(`${ORIGIN}purge:\n  header: "bad header"\ncache:\n  bypassCacheHeaders: [x-ok, ":authority", ""]\n`)).toEqual([
      `config.yaml: purge.header: ${token}, got "bad header" (line 4)`,
      `config.yaml: cache.bypassCacheHeaders[1]: ${token}, got ":authority" (line 6)`,
      `config.yaml: cache.bypassCacheHeaders[2]: ${token}, got "" (line 6)`,
    ]);
  });

  // An outside audit: svc-cache removes the purge token's header from every request it forwards, and
  // `purge.header: authorization` signed every user out at the origin, `check` passing.
  it('refuses for purge.header a header requests carry for the origin, or one a scope reads', () => {
    const own = 'a header requests carry for the origin: svc-cache removes the purge token header from every request it forwards; name one of its own, e.g. svc-purge-token';
    for (const header of ['authorization', 'Cookie', 'content-type', 'Host', 'accept-encoding', 'Origin', 'x-apollo-operation-name', 'traceparent', 'svc-debug', 'mercurius-require-preflight', 'x-original-url', 'X_Forwarded_Proto', 'x-scheme', 'x-real-ip', 'x-api-key', 'x-csrf-token', 'x-forwarded-client-cert']) {
      expect(problems(`${ORIGIN}purge:\n  header: ${header}\n`)).toEqual([`config.yaml: purge.header: ${own} (line 4)`]);
    }
    const scoped = 'scope "TENANT" reads this header: svc-cache removes the purge token header from every request it forwards; name one of its own, e.g. svc-purge-token';
    expect(problems(`${ORIGIN}scopes:\n  TENANT: header:x-team|header:X-Tenant\npurge:\n  header: x-tenant\n`)).toEqual([`config.yaml: purge.header: ${scoped} (line 6)`]);
    expect(parse(`${ORIGIN}scopes:\n  TEAM: cookie:x-tenant\npurge:\n  header: x-tenant\n`).purge.header).toBe('x-tenant');
    expect(problems(`${ORIGIN}purge:\n  header: x-purge\ncache:\n  bypassCacheHeaders: [X-Purge]\n`)).toEqual([
      'config.yaml: purge.header: also in cache.bypassCacheHeaders: every purge and svc-debug request would skip the cache; name a header of its own, e.g. svc-purge-token (line 4)',
    ]);
  });
});

describe('bounds: Node timers and Redis lifetimes', () => {
  // An outside audit: past 2^31 - 1 ms Node fires a timer at once, and past 10^14 ms Redis's scripts
  // refuse a lifetime; `check` passed, then every Redis command, purge or store failed.
  it('refuses milliseconds past 2147483647 and seconds past ten years', () => {
    const text = [
      ORIGIN,
      'redis:\n  url: redis://redis:6379\n  commandTimeoutMs: 3000000000\n  localCache:\n    ackTimeoutMs: 2147483648\n',
      'cache:\n  coalesceWaitMs: 2147483648\n',
      'apq:\n  ttl: 315360001\n',
      'rules:\n  - { types: [Query], maxAge: 100000000000000, swr: 315360001, staleIfError: 315360001 }\n',
    ].join('');
    expect(problems(text).map((problem) => problem.replace(/ \(line \d+\)$/, ''))).toEqual([
      'config.yaml: redis.commandTimeoutMs: expected a whole number > 0 and <= 60000, got 3000000000',
      'config.yaml: redis.localCache.ackTimeoutMs: expected a whole number > 0 and <= 2147483647, got 2147483648',
      'config.yaml: cache.coalesceWaitMs: expected a whole number >= 0 and <= 2147483647, got 2147483648',
      'config.yaml: apq.ttl: expected a whole number > 0 and <= 315360000, got 315360001',
      'config.yaml: rules[0].maxAge: expected a whole number >= 0 and <= 315360000, got 100000000000000',
      'config.yaml: rules[0].swr: expected a whole number >= 0 and <= 315360000, got 315360001',
      'config.yaml: rules[0].staleIfError: expected a whole number >= 0 and <= 315360000, got 315360001',
    ]);
  });
});
