import { describe, expect, it } from 'vitest';
import { DEFAULT_ENDPOINTS, endpointOf, endpointRouting, keyedHeaders } from '../../src/http/requestTarget.js';

describe('endpointOf', () => {
  it('defaults to /graphql', () => {
    expect(DEFAULT_ENDPOINTS).toEqual(['/graphql']);
    expect(endpointOf('/graphql')).toBe('/graphql');
  });

  it.each([
    ['/graphql', '/graphql'],
    ['/graphql?x', '/graphql'],
    ['/graphql?query=%7Bme%7D&x=/other', '/graphql'],
    ['/graphql?', '/graphql'],
  ])('%j is %j', (path, endpoint) => {
    expect(endpointOf(path, ['/graphql'])).toBe(endpoint);
  });

  it.each(['/graphql/', '/GRAPHQL', '//graphql', '/graphql;x', '/%67raphql', '/graphql%3F', '/graphql#x', '/graphq', '/graphqlx', '', '/', 'graphql', '/echo?/graphql'])(
    '%j is not an endpoint',
    (path) => {
      expect(endpointOf(path, ['/graphql'])).toBeUndefined();
    },
  );

  // A WHATWG URL parser reads `\\` as `/` and drops a fragment (which Envoy may be set to pass).
  it.each(['/graphql/', '/GRAPHQL', '//graphql', '/graphql;x', '/%67raphql', '/./graphql', '/x/../graphql', '/%2e/graphql', '/GraphQL/?x=1', '/graphql\\', '\\graphql', '/graphql#x', '/graphql#x?y'])(
    '%j is a variant an origin may route to /graphql',
    (path) => {
      expect(endpointRouting(path, ['/graphql'])).toBe('variant');
    },
  );

  it.each(['/graphql%3F', '/graphq', '/graphqlx', '/', '', '/echo', '/graphql/x', '/x/graphql', '/graphql%2F'])('%j is no variant of /graphql', (path) => {
    expect(endpointRouting(path, ['/graphql'])).not.toBe('variant');
  });

  // Express matches the raw path: `/graphql/..` reaches a handler mounted on /graphql.
  it.each(['/graphql/x', '/graphql/x/y?z', '/Graphql//x', '/%67raphql/x', '/graphql\\x', '/graphql/..', '/GraphQL/x/../..', '/graphql/%2e%2e'])('%j is below /graphql', (path) => {
    expect(endpointRouting(path, ['/graphql'])).toBe('below');
  });

  it.each(['/graphql', '/graphql/', '/graphql.json', '/graphqlx/y', '/x/graphql'])('%j is not below /graphql', (path) => {
    expect(endpointRouting(path, ['/graphql'])).not.toBe('below');
  });

  it('takes every path for one below an endpoint at the root, which a server answering GraphQL on every path serves', () => {
    expect([endpointRouting('/other', ['/']), endpointRouting('/a/b?c', ['/'])]).toEqual(['root', 'root']);
  });

  // GraphQL Yoga serves any request whose URL, query string included, ends with its endpoint path.
  it.each(['/x/graphql', '/x/graphql/', '/echo?/graphql', '/?x=/graphql'])('%j ends with /graphql, as Yoga routes it', (path) => {
    expect(endpointRouting(path, ['/graphql'])).toBe('suffix');
  });

  it.each(['/graphqlx', '/x/graphq', '/echo', '/x/GRAPHQL'])('%j is routed no way to /graphql', (path) => {
    expect(endpointRouting(path, ['/graphql'])).toBeUndefined();
  });

  it('matches any configured endpoint and only those', () => {
    const endpoints = ['/t/acme/graphql', '/t/globex/graphql'];
    expect(endpointOf('/t/acme/graphql?x=1', endpoints)).toBe('/t/acme/graphql');
    expect(endpointOf('/t/globex/graphql', endpoints)).toBe('/t/globex/graphql');
    expect(endpointOf('/graphql', endpoints)).toBeUndefined();
    expect(endpointOf('/graphql', [])).toBeUndefined();
  });
});

describe('keyedHeaders', () => {
  it('is empty without keyed headers, and tells every sent value apart', () => {
    // Traefik and Apache set x-forwarded-server to their own host name: keyed, each proxy replica would have its entries.
    expect(keyedHeaders([['host', 'api.example'], ['x-forwarded-for', '192.0.2.60'], ['x-forwarded-server', 'traefik-7d9f'], ['content-type', 'application/json']], false)).toBe('');
    const keys = [
      [['x-forwarded-host', 'evil.example']],
      [['x-forwarded-host', 'good.example']],
      [['forwarded', 'host=evil.example']],
      [['x-forwarded-host', 'evil.example'], ['forwarded', 'host=good.example']],
      [['x-forwarded-host', '']],
      [['x-forwarded-proto', 'https']],
      [['x-forwarded-proto', 'http']],
      [['x-forwarded-port', '8443']],
      [['x-forwarded-prefix', '/evil']],
      [['x-forwarded-ssl', 'on']],
      [['x-forwarded-scheme', 'https']],
      [['x-original-url', '/admin/graphql']],
      [['x-rewrite-url', '/admin/graphql']],
      [['forwarded', 'proto=https']],
      [['x-original-host', 'evil.example']],
      [['x-forwarded-uri', '/evil/graphql']],
      // An outside audit: scheme and prefix headers Tornado, Jetty, Echo and gunicorn read.
      ...['x-scheme', 'x-forwarded-protocol', 'x-url-scheme', 'x-proxied-https', 'front-end-https', 'x-forwarded-path', 'x-script-name'].map((name) => [[name, 'https']]),
      [['origin', 'https://a.example']],
      [['origin', 'https://b.example']],
    ].map((headers) => keyedHeaders([...(headers as Array<[string, string]>), ['content-type', 'application/json']], false));
    expect(new Set([...keys, '']).size).toBe(keys.length + 1);
  });

  it('keys a forwarding header sent with underscores, which CGI-style origins read as the header itself', () => {
    // WSGI, Rack and PHP read X_Forwarded_Host as HTTP_X_FORWARDED_HOST: unkeyed, it would poison a shared entry.
    const plain = keyedHeaders([['x-forwarded-proto', 'https']], false);
    const keys = [
      keyedHeaders([['x-forwarded-proto', 'https'], ['x_forwarded_host', 'evil.example']], false),
      keyedHeaders([['x-forwarded-proto', 'https'], ['x_forwarded_host', 'good.example']], false),
      keyedHeaders([['x_forwarded-proto', 'http'], ['x-forwarded-proto', 'https']], false),
      keyedHeaders([['x-forwarded-proto', 'https'], ['x-forwarded-host', 'evil.example']], false),
    ];
    expect(new Set([plain, ...keys]).size).toBe(5);
    expect(keyedHeaders([['x_forwarded_for', '192.0.2.60'], ['x_real_ip', '192.0.2.60'], ['content-type', 'application/json']], false)).toBe('');
  });

  it('keys what a CSRF-preventing origin reads of a request it may refuse: the content type as sent and its headers\' presence', () => {
    // Apollo Server 4 (csrfPrevention), Yoga's CSRF plugin and Mercurius (csrfPrevention) refuse some
    // of these, each by its own reading; their answers must not come from the entry of a request
    // one of them reads otherwise.
    expect(keyedHeaders([], false)).toBe('\u0000:preflight ----- none');
    expect(keyedHeaders([['content-type', '']], false)).toBe('\u0000:preflight ----- =');
    expect(keyedHeaders([['content-type', 'Text/Plain; charset=utf-8']], false)).toBe('\u0000:preflight ----- =Text/Plain; charset=utf-8');
    expect(keyedHeaders([['content-type', 'text/plainx']], false)).toBe('\u0000:preflight ----- =text/plainx');
    expect(keyedHeaders([['x-graphql-yoga-csrf', ''], ['apollo-require-preflight', 'true']], false)).toBe('\u0000:preflight -10-- none');
    expect(keyedHeaders([['x-apollo-operation-name', 'Todos'], ['content-type', 'multipart/form-data; boundary=b']], false)).toBe(
      '\u0000:preflight 1---- =multipart/form-data; boundary=b',
    );
    expect(keyedHeaders([['mercurius-require-preflight', '1'], ['x-mercurius-operation-name', '']], false)).toBe('\u0000:preflight ---01 none');
    expect(keyedHeaders([['origin', 'https://a.example']], false)).toBe('\u0000origin:https://a.example\u0000:preflight ----- none');
    // Apollo reads repeated lines joined, never empty: two empty lines are not one.
    expect(keyedHeaders([['apollo-require-preflight', ''], ['apollo-require-preflight', '']], false)).toBe('\u0000:preflight -1--- none');
    // application/json as JSON clients send it, which none refuses in a POST: no part without
    // their headers; with one (an older Yoga asked for its header on every request), the part.
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8']) {
      expect(keyedHeaders([['content-type', contentType]], false)).toBe('');
      expect(keyedHeaders([['content-type', contentType], ['x-graphql-yoga-csrf', '1']], false)).toBe(`\u0000:preflight --1-- =${contentType}`);
    }
    // Mercurius refuses other spellings and other types; express-graphql a GET that declares JSON.
    for (const contentType of ['Application/JSON', 'application/graphql-response+json', 'application/octet-stream', 'application/jsonx']) {
      expect(keyedHeaders([['content-type', contentType]], false)).toBe(`\u0000:preflight ----- =${contentType}`);
    }
    expect(keyedHeaders([['content-type', 'application/json']], true)).toBe('\u0000:preflight ----- =application/json');
    expect(keyedHeaders([], true)).toBe(keyedHeaders([], false));
  });

  it('keys the headers by name, whatever order they came in, and a repeated one in its order', () => {
    const host: [string, string] = ['x-forwarded-host', 'shop.example'];
    const proto: [string, string] = ['x-forwarded-proto', 'https'];
    const forwarded: [string, string] = ['forwarded', 'host=shop.example'];
    const inOrder = keyedHeaders([forwarded, host, proto], false);
    for (const headers of [[proto, host, forwarded], [host, ['accept', '*/*'], forwarded, proto]] as Array<Array<[string, string]>>) {
      expect(keyedHeaders(headers, false)).toBe(inOrder);
    }
    const hosts = (first: string, second: string) => keyedHeaders([proto, ['x-forwarded-host', first], ['x-forwarded-host', second]], false);
    expect(hosts('a.example', 'b.example')).not.toBe(hosts('b.example', 'a.example'));
  });

  it("keys forwarded without its for= parameters, each client's own address, and the rest as sent", () => {
    expect(keyedHeaders([['forwarded', 'for=192.0.2.60']], false)).toBe(keyedHeaders([['forwarded', 'for=198.51.100.17']], false));
    expect(keyedHeaders([['forwarded', 'for=192.0.2.60;proto=http;by=203.0.113.43']], false)).toBe(
      keyedHeaders([['forwarded', 'For=198.51.100.17;proto=http;by=203.0.113.43']], false),
    );
    expect(keyedHeaders([['forwarded', 'for=192.0.2.60;proto=http']], false)).not.toBe(keyedHeaders([['forwarded', 'for=192.0.2.60;proto=https']], false));
    expect(keyedHeaders([['forwarded', 'for="[2001:db8:cafe::17]:4711";proto=http']], false)).toBe(keyedHeaders([['forwarded', 'for=unknown;proto=http']], false));
    // A malformed for= may hide a parameter from a lenient origin: it stays in the key.
    expect(keyedHeaders([['forwarded', 'for=1.1.1.1 host=evil;proto=https;host=shop']], false)).not.toBe(keyedHeaders([['forwarded', 'for=2.2.2.2;proto=https;host=shop']], false));
    expect(keyedHeaders([['forwarded', 'for=192.0.2.60;host=a.example, for=198.51.100.17']], false)).not.toBe(
      keyedHeaders([['forwarded', 'for=192.0.2.60;host=b.example, for=198.51.100.17']], false),
    );
  });
});
