import { createHash } from 'node:crypto';
import { BREAK, buildSchema, parse, visit, type DocumentNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { configSchema, type Config } from '../../src/config/schema.js';
import { MissCoalescer } from '../../src/engine/coalescing.js';
import {
  checkLimits,
  checkSentQueryText,
  classify,
  lookupOrCoalesce,
  readParameters,
  resolveQuery,
  scopeAndKey,
  scopeExplanation,
  usesIncrementalDelivery,
  type CheckedOperation,
  type DocumentAnalysis,
  type ResolvedQuery,
} from '../../src/engine/requestStages.js';
import { cachePolicyFor, selectsUnnamedIntrospection } from '../../src/engine/rules.js';
import { scopeBucketKey } from '../../src/engine/scopes.js';
import { selectionOf } from '../../src/graphql/selection.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { CacheStore } from '../../src/store/index.js';
import { MemoryPersistedQueryRegistry } from '../../src/apq/registry.js';
import { RepeatedWarning, silentLogger } from '../../src/observability/index.js';
import { demoSchemaSDL } from '../support/origin.js';

/** Each stage of a request's decision alone, with plain inputs. */

const schema = buildSchema(demoSchemaSDL);

function config(input: Record<string, unknown> = {}): Config {
  return configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, rules: [{ types: ['Query'], maxAge: 60 }], ...input });
}

const head = (method: string, path = '/graphql', headers: Array<[string, string]> = [['content-type', 'application/json']]) => ({
  method,
  path,
  headers,
  hasBody: method === 'POST',
});

const resolved = (query: string | undefined, fromRegistry = false, storedById = false): ResolvedQuery => ({ query, persisted: fromRegistry, storedById, fromRegistry, registration: undefined });

function analyse(current: Config) {
  return (document: DocumentNode): DocumentAnalysis => ({
    config: current,
    schema,
    violation: undefined,
    policy: cachePolicyFor(current.rules, selectionOf(schema, document)),
    streams: usesIncrementalDelivery(document),
    unnamedIntrospection: selectsUnnamedIntrospection(current.rules, selectionOf(schema, document)),
    untypedSelection: selectionOf(schema, document).untypedSelection,
  });
}

function checked(query: string, current = config()): CheckedOperation {
  const result = checkLimits(resolved(query), current.limits, undefined, analyse(current));
  if (!('selected' in result)) throw new Error(`expected an operation, got ${JSON.stringify(result)}`);
  return result;
}

describe('readParameters', () => {
  it('reads a GET from its path and a POST from its body, variables in their canonical text', () => {
    expect(readParameters(head('GET', '/graphql?query=%7Ba%7D&operationName=A'), Buffer.alloc(0))).toEqual({
      kind: 'graphql',
      params: { query: '{a}', operationName: 'A', variables: {}, extensions: {} },
      canonicalVariables: '{}',
      orderedVariables: '{}',
      canonicalExtensions: '',
      documentIds: [],
      namesDocumentId: false,
      idsSent: [],
      canonicalExtensionsById: '',
      otherUrlParameters: '',
      otherMembers: '',
    });
    expect(readParameters(head('POST'), Buffer.from('{"query":"{a}","variables":{"y":1.0, "x":1}}'))).toMatchObject({
      kind: 'graphql',
      params: { query: '{a}', operationName: undefined, variables: { x: 1, y: 1 }, extensions: {} },
      canonicalVariables: '{"x":1,"y":1.0}',
      // Variables are read by name: only their own members keep the order sent.
      orderedVariables: '{"x":1,"y":1.0}',
    });
    expect(readParameters(head('POST'), Buffer.from('[1]'))).toEqual({ kind: 'uninterpretable', reason: 'body-not-object' });
  });

  it('finds ambiguity in a POST URL, batches and bytes that are not UTF-8', () => {
    const body = Buffer.from('{"query":"{a}"}');
    expect(readParameters(head('POST', '/graphql?query=%7Bb%7D'), body)).toEqual({ kind: 'ambiguous', reason: 'url-parameter' });
    expect(readParameters(head('GET', '/graphql?query=%7Ba%7D&query=%7Bb%7D'), Buffer.alloc(0))).toEqual({ kind: 'ambiguous', reason: 'repeated-parameter' });
    expect(readParameters(head('POST'), Buffer.from('[{"query":"{a}"}]'))).toMatchObject({ kind: 'batch' });
    expect(readParameters(head('POST'), Buffer.from([0x7b, 0xff, 0x7d]))).toEqual({ kind: 'uninterpretable', reason: 'invalid-utf8' });
  });
});

describe('resolveQuery', () => {
  const deps = (documents?: ReadonlyMap<string, string>) => ({
    apq: config().apq,
    registry: new MemoryPersistedQueryRegistry({ maxBytes: () => 1024 * 1024 }),
    warnings: {
      registryUnavailable: new RepeatedWarning(silentLogger(), 'persisted query registry unavailable'),
      notRegistered: new RepeatedWarning(silentLogger(), 'persisted query not registered'),
    },
    documents,
  });
  const hash = (text: string) => createHash('sha256').update(text).digest('hex');
  const params = (query: string | undefined, extensions: Record<string, unknown> = {}) => ({ query, operationName: undefined, variables: {}, extensions });

  it('a request without a persisted-query reference resolves at once, not through a promise', () => {
    expect(resolveQuery(params('{ todos { id } }'), [], deps())).toEqual({
      query: '{ todos { id } }',
      persisted: false,
      storedById: false,
      fromRegistry: false,
      registration: undefined,
    });
    expect(resolveQuery(params('{ a }', { persistedQuery: null }), [], deps())).toEqual({
      query: '{ a }',
      persisted: false,
      storedById: false,
      fromRegistry: false,
      registration: undefined,
    });
  });

  it('a reference is resolved through the registry: unknown, then registered with its text', async () => {
    const dependencies = deps();
    const reference = { persistedQuery: { version: 1, sha256Hash: hash('{ a }') } };
    const unknown = resolveQuery(params(undefined, reference), [], dependencies);
    expect(unknown).toBeInstanceOf(Promise);
    expect(await unknown).toMatchObject({ kind: 'refused', refusal: 'not-found' });
    expect(await resolveQuery(params('{ a }', reference), [], dependencies)).toMatchObject({ query: '{ a }', persisted: true, fromRegistry: false });
  });

  it("an id the manifest holds resolves to its document, before APQ's registry is asked", () => {
    const manifest = new Map([
      ['d1', '{ todos { id } }'],
      [hash('{ a }'), '{ a }'],
    ]);
    const stored = { persisted: false, storedById: true, fromRegistry: false, registration: undefined };
    expect(resolveQuery(params(undefined), ['d1'], deps(manifest))).toEqual({ query: '{ todos { id } }', ...stored });
    expect(resolveQuery(params(undefined, { persistedQuery: { version: 1, sha256Hash: hash('{ a }') } }), [], deps(manifest))).toEqual({ query: '{ a }', ...stored });
    // The same id twice (body and URL, documentId and doc_id) is one id.
    expect(resolveQuery(params(undefined), ['d1', 'd1'], deps(manifest))).toEqual({ query: '{ todos { id } }', ...stored });
  });

  it('sent text, two different ids, an id that is not a string or an unknown id are not resolved from the manifest', async () => {
    const manifest = new Map([
      ['d1', '{ todos { id } }'],
      ['d2', 'mutation { clear }'],
    ]);
    const unresolved = { query: undefined, persisted: false, storedById: false };
    expect(resolveQuery(params('{ b }'), ['d1'], deps(manifest))).toMatchObject({ query: '{ b }', storedById: false });
    const unread = { ...unresolved, unresolvedDocumentId: 'unread' };
    expect(resolveQuery(params(undefined), ['d1', 'd2'], deps(manifest))).toEqual({ ...unread, fromRegistry: false, registration: undefined });
    expect(resolveQuery(params(undefined), ['d1', null], deps(manifest))).toMatchObject(unread);
    expect(resolveQuery(params(undefined), [null], deps(manifest))).toMatchObject(unread);
    expect(resolveQuery(params(undefined), ['d3'], deps(manifest))).toMatchObject({ ...unresolved, unresolvedDocumentId: 'unknown' });
    // No text and nothing else is no stored document.
    expect(resolveQuery(params(undefined), [], deps(manifest))).toEqual({ ...unresolved, fromRegistry: false, registration: undefined });
    // A hash neither the manifest nor APQ knows, APQ on or off, and a custom id: the origin's newer manifest may.
    for (const apq of [config().apq, { ...config().apq, enabled: false }]) {
      for (const id of [hash('{ c }'), 'GetUser']) {
        const unknownHash = resolveQuery(params(undefined, { persistedQuery: { version: 1, sha256Hash: id } }), [], { ...deps(manifest), apq });
        expect(await unknownHash).toEqual({ query: undefined, persisted: false, storedById: false, fromRegistry: false, registration: undefined, unresolvedDocumentId: 'unknown' });
      }
    }
    expect(resolveQuery(params(undefined), ['d1'], deps(undefined))).toMatchObject(unread);
    // A persisted-query reference of another shape, which some origins take an id from whatever its version says.
    expect(await resolveQuery(params(undefined, { persistedQuery: { version: 2, sha256Hash: 'd2' } }), ['d1'], deps(manifest))).toMatchObject({ kind: 'refused', refusal: 'bad-version' });
    expect(await resolveQuery(params(undefined, { persistedQuery: 'd1' }), ['d1'], deps(manifest))).toMatchObject({ kind: 'refused', refusal: 'bad-shape' });
    // Hot Chocolate takes an id from another member of it: with a manifest, the origin's to answer.
    expect(await resolveQuery(params(undefined, { persistedQuery: { version: 1, sha256Hash: 'd1', md5Hash: 'd2' } }), [], deps(manifest))).toMatchObject(unread);
    const hashAndId = resolveQuery(params(undefined, { persistedQuery: { version: 1, sha256Hash: hash('{ a }') } }), ['d1'], deps(manifest));
    expect(await hashAndId).toMatchObject(unread);
    // Without one, svc-cache's own APQ answers a hash it does not know.
    expect(await resolveQuery(params(undefined, { persistedQuery: { version: 1, sha256Hash: hash('{ a }') } }), [null], deps(undefined))).toMatchObject({ kind: 'refused', refusal: 'not-found' });
  });
});

describe('checkSentQueryText and checkLimits', () => {
  it('refuses sent query text over maxQueryBytes with QUERY_TOO_LARGE', () => {
    const verdict = checkSentQueryText({ query: `{ todos { id } }${' '.repeat(100)}`, operationName: undefined, variables: {}, extensions: {} }, config({ limits: { maxQueryBytes: 64 } }).limits);
    expect(verdict).toMatchObject({ kind: 'respond', outcome: 'ERROR', errorCode: 'QUERY_TOO_LARGE', response: { status: 400 } });
  });

  it('refuses registered text over the limit too, but only when it came from the registry', () => {
    const small = config({ limits: { maxQueryBytes: 10 } });
    expect(checkLimits(resolved('{ todos { id } }', true), small.limits, undefined, analyse(small))).toMatchObject({ errorCode: 'QUERY_TOO_LARGE' });
    expect(checkLimits(resolved('{ todos { id } }'), small.limits, undefined, analyse(small))).toHaveProperty('selected');
  });

  it('passes a stored document over the limits as one svc-cache cannot see: the origin runs it anyway', () => {
    const small = config({ limits: { maxQueryBytes: 10 } });
    expect(checkLimits(resolved('{ todos { id } }', false, true), small.limits, undefined, analyse(small))).toEqual({
      kind: 'pass',
      reason: 'stored-document-over-limits',
      detail: 'Query is 16 bytes; the limit is 10',
    });
  });

  it.each([
    ['no query', undefined, undefined, { kind: 'pass', reason: 'no-query' }],
    ['a syntax error', '{ todos', undefined, { kind: 'pass', reason: 'syntax-error', detail: 'Syntax Error: Expected Name, found <EOF>.' }],
    ['an unknown operation', 'query A { todos { id } }', 'B', { kind: 'pass', reason: 'unknown-operation', detail: 'no operation named "B"' }],
  ] as const)('passes %s with its code', (_name, query, operationName, verdict) => {
    const current = config();
    expect(checkLimits(resolved(query), current.limits, operationName, analyse(current))).toEqual(verdict);
  });

  // The CPU audit: 1,900 inline fragments nested in one another (15 KB, no depth) printed to 7 MB.
  it('refuses a document nested deeper than twice maxDepth, fields and inline fragments alike, before it is printed; a stored one passes', () => {
    const nested = (levels: number) => `{ todos { ${'... { '.repeat(levels)}title${' }'.repeat(levels)} } }`;
    const current = config();
    expect(checkLimits(resolved(nested(50)), current.limits, undefined, analyse(current))).toHaveProperty('selected');
    // The review: a query as deep as maxDepth with an inline fragment at each level is within it.
    const fragmentEachLevel = `{ ${'todos { ... on Todo { '.repeat(20)}id${' } }'.repeat(20)} }`;
    const twenty = config({ limits: { maxDepth: 20 } });
    expect(checkLimits(resolved(fragmentEachLevel), twenty.limits, undefined, analyse(twenty))).toHaveProperty('selected');
    expect(checkLimits(resolved(nested(51)), current.limits, undefined, analyse(current))).toMatchObject({
      kind: 'respond',
      errorCode: 'QUERY_TOO_DEEP',
      response: { status: 400 },
    });
    const shallow = config({ limits: { maxDepth: 3 } });
    expect(checkLimits(resolved(nested(30)), shallow.limits, undefined, analyse(shallow))).toHaveProperty('selected');
    expect(checkLimits(resolved(nested(1_900)), current.limits, undefined, analyse(current))).toMatchObject({ errorCode: 'QUERY_TOO_DEEP' });
    expect(checkLimits(resolved(nested(1_900), false, true), current.limits, undefined, analyse(current))).toEqual({
      kind: 'pass',
      reason: 'stored-document-over-limits',
      detail: 'Query nests brackets ({, [, () more than 104 deep, the limit',
    });
  });

  it('refuses what the document analysis found over the limits', () => {
    const current = config();
    const violating = (document: DocumentNode): DocumentAnalysis => ({
      ...analyse(current)(document),
      violation: { code: 'QUERY_TOO_DEEP', message: 'Query is deeper than 1 levels' },
    });
    expect(checkLimits(resolved('{ todos { id } }'), current.limits, undefined, violating)).toMatchObject({
      kind: 'respond',
      errorCode: 'QUERY_TOO_DEEP',
      response: { status: 400 },
    });
  });
});

describe('usesIncrementalDelivery', () => {
  /** What it answered when it visited every node with graphql's `visit`: the oracle the direct walk is held to. */
  function visitedIncrementally(document: DocumentNode): boolean {
    let found = false;
    visit(document, {
      Directive(node) {
        if (node.name.value !== 'defer' && node.name.value !== 'stream') return undefined;
        found = true;
        return BREAK;
      },
    });
    return found;
  }

  it.each([
    ['no directive', '{ todos { id } }', false],
    ['another directive, deep', '{ todos { id ... on Todo { author { name @skip(if: true) } } } }', false],
    ['@defer on an inline fragment', '{ todos { id ... @defer { title } } }', true],
    ['@defer on a fragment spread', '{ todos { ...F @defer } } fragment F on Todo { id }', true],
    ['@stream in a fragment definition', '{ ...F } fragment F on Query { todos @stream { id } }', true],
    ['@defer on an aliased field deep down', '{ a: todos { b: author { c: name @defer } } }', true],
    ['@defer on the operation', 'query Q @defer { todos { id } }', true],
    ['@stream on a variable definition', 'query Q($first: Int @stream) { todos { id } }', true],
    ['@defer on a fragment definition', 'query Q { ...F } fragment F on Query @defer { todos { id } }', true],
    ['type-system definitions with other directives', '{ todos { id } } type T { f: Int @deprecated }', false],
    ['@stream in a type-system definition', 'type T { f: Int @stream } { todos { id } }', true],
  ])('%s', (_, query, streams) => {
    const document = parse(query, { noLocation: true });
    expect(usesIncrementalDelivery(document)).toBe(streams);
    expect(visitedIncrementally(document)).toBe(streams);
  });
});

describe('classify', () => {
  const post = { method: 'POST' as const, headers: [] as Array<[string, string]> };

  it('refuses a mutation over GET with 405 and allow: POST', () => {
    const verdict = classify(checked('mutation { addTodo(title: "x") { id } }'), { method: 'GET', headers: [] }, config(), schema);
    expect(verdict).toMatchObject({ kind: 'respond', errorCode: 'METHOD_NOT_ALLOWED', response: { status: 405, headers: [['content-type', 'application/json; charset=utf-8'], ['allow', 'POST']] } });
  });

  it('without a schema: 503 for a token-bearing purge look-alike, else mutation or schema-not-loaded', () => {
    const token = { method: 'POST' as const, headers: [['svc-purge-token', 't']] as Array<[string, string]> };
    expect(classify(checked('mutation { _purgeAll }'), token, config(), undefined)).toMatchObject({ errorCode: 'PURGE_UNAVAILABLE', response: { status: 503 } });
    expect(classify(checked('mutation { _purgeAll }'), post, config(), undefined)).toEqual({ kind: 'pass', reason: 'mutation' });
    expect(classify(checked('{ todos { id } }'), post, config(), undefined)).toEqual({ kind: 'pass', reason: 'schema-not-loaded' });
  });

  it('routes every mutation, and a query with the purge token header, to the purge handler first', () => {
    const mutation = classify(checked('mutation { addTodo(title: "x") { id } }'), post, config(), schema);
    expect(mutation).toEqual({ kind: 'purge', schema, otherwise: { kind: 'mutation', schema } });
    const tokenQuery = classify(checked('{ todos { id } }'), { method: 'POST', headers: [['svc-purge-token', 't']] }, config(), schema);
    expect(tokenQuery).toMatchObject({ kind: 'purge', otherwise: { kind: 'query' } });
    const none = classify(checked('mutation { addTodo(title: "x") { id } }'), post, config({ mutationPolicy: 'None' }), schema);
    expect(none).toEqual({ kind: 'purge', schema, otherwise: { kind: 'pass', reason: 'mutation' } });
  });

  it.each([
    ['a subscription', 'subscription { x }', {}, [], 'subscription'],
    ['@defer', '{ todos { id ... @defer { title } } }', {}, [], 'streaming-document'],
    ['@stream in a fragment', '{ ...F } fragment F on Query { todos @stream { id } }', {}, [], 'streaming-document'],
    ['a client accepting no JSON type', '{ todos { id } }', {}, [['accept', 'text/event-stream']], 'streaming-request'],
    ['a client accepting JSON only at q=0', '{ todos { id } }', {}, [['accept', 'application/json;q=0, multipart/mixed']], 'streaming-request'],
    ['introspection under a type rule', '{ __schema { queryType { name } } }', {}, [], 'introspection'],
    ['__type under a type rule', '{ __type(name: "Todo") { name } }', {}, [], 'introspection'],
    ['a bypass header', '{ todos { id } }', { cache: { bypassCacheHeaders: ['X-Bypass'] } }, [['x-bypass', '1']], 'bypass-header'],
    ['a request for an Apollo Federation inline trace', '{ todos { id } }', {}, [['apollo-federation-include-trace', 'ftv1']], 'trace-requested'],
    // The review: Hot Chocolate and Sangria trace on other headers, and gateways show their plan.
    ...['x-apollo-tracing', 'graphql-tracing', 'graphql-query-plan', 'apollo-query-plan-experimental', 'apollo-expose-query-plan', 'hive-expose-query-plan', 'x-wg-include-query-plan'].map(
      (name): [string, string, Record<string, unknown>, Array<[string, string]>, string] => [`a request with ${name}`, '{ todos { id } }', {}, [[name, '1']], 'trace-requested'],
    ),
    // The review of the audit's fix: under a field the schema lacks, a type the rules name cannot be seen.
    ['a selection within a field the schema lacks', '{ teamBalance { amount } }', {}, [], 'schema-lacks-field'],
    ['no matching rule', '{ todos { id } }', { rules: [{ types: ['User'], maxAge: 60 }] }, [], 'no-rule'],
    ['a rule with maxAge 0', '{ todos { id } }', { rules: [{ types: ['Query'], maxAge: 0 }] }, [], 'max-age-zero'],
    ['credentials on PUBLIC', '{ todos { id } }', {}, [['cookie', 'a=b']], 'credentials-on-public'],
  ] as Array<[string, string, Record<string, unknown>, Array<[string, string]>, string]>)('passes %s', (_name, query, input, headers, reason) => {
    const current = config(input);
    expect(classify(checked(query, current), { method: 'POST', headers }, current, schema)).toEqual({ kind: 'pass', reason });
  });

  it('classifies a request whose Cache-Control asks for no-cache, max-age=0 or no-store as a query (no-store is for storing: engine.test.ts)', () => {
    const current = config({});
    for (const value of ['no-cache', 'max-age=0', 'no-transform', 'no-store']) {
      expect(classify(checked('{ todos { id } }', current), { method: 'POST', headers: [['cache-control', value]] }, current, schema)).toMatchObject({ kind: 'query' });
    }
  });

  describe('credentials in the bucket of no value', () => {
    const scoped = {
      scopes: { AUTH: 'header:authorization', SESSION: 'cookie:session', TEAM: 'header:x-team|cookie:team', TENANT: 'header:x-tenant' },
      rules: [
        { types: { Query: ['todos'] }, maxAge: 60, scope: 'AUTH' },
        { types: { Query: ['users'] }, maxAge: 60, scope: 'SESSION' },
        { types: { Query: ['todo'] }, maxAge: 60, scope: 'TEAM' },
        { types: { Query: ['me'] }, maxAge: 60, scope: 'TENANT' },
        { types: { Query: ['me'] }, maxAge: 60, scope: 'AUTH' },
      ],
    };

    it.each([
      ['a cookie beside an absent Authorization scope', '{ todos { id } }', [['cookie', 'sid=a']]],
      ['Authorization beside an absent session cookie', '{ users { id } }', [['authorization', 'Bearer a']]],
      ['Authorization beside a combined scope with neither value', '{ todo(id: "1") { id } }', [['authorization', 'Bearer a'], ['cookie', 'x=1']]],
      ['a cookie under TENANT+AUTH with the tenant alone', '{ me { id } }', [['x-tenant', 'acme'], ['cookie', 'sid=a']]],
      // An empty value is a bucket every client sending it shares (Apollo's auth link sends "" without a token).
      ['a cookie beside an Authorization scope sent empty', '{ todos { id } }', [['authorization', ''], ['cookie', 'sid=a']]],
      ['Authorization beside a session cookie sent empty', '{ users { id } }', [['cookie', 'session='], ['authorization', 'Bearer a']]],
      ['Proxy-Authorization beside an absent Authorization scope', '{ todos { id } }', [['proxy-authorization', 'Basic YTpi']]],
      ['a cookie beside an Authorization scope sent as a placeholder', '{ todos { id } }', [['authorization', 'Bearer null'], ['cookie', 'sid=a']]],
      ['a cookie beside an Authorization scope sent as a bare scheme', '{ todos { id } }', [['authorization', 'Bearer'], ['cookie', 'sid=a']]],
      ['a cookie beside an Authorization scope sent as JWT [object Object]', '{ todos { id } }', [['authorization', 'JWT [object Object]'], ['cookie', 'sid=a']]],
      // The scope audit: what Python, Go and unfilled templates send without a token.
      // The review: a getter never awaited, shell and other templates.
      ...['Bearer None', 'Bearer <nil>', 'Bearer nil', 'Bearer %s', 'Bearer ${token}', 'Bearer {{token}}', 'Bearer [object Promise]', 'Bearer $TOKEN', 'Bearer {token}', 'Bearer <token>', 'Bearer #{token}', 'Bearer %(token)s'].map(
        (value): [string, string, Array<[string, string]>] => [`a cookie beside an Authorization scope sent as ${value}`, '{ todos { id } }', [['authorization', value], ['cookie', 'sid=a']]],
      ),
      ['another cookie beside the scope\'s own quoted empty', '{ users { id } }', [['cookie', 'session=""; remember=alice']]],
      // A cookie scope reads its cookie, not the others: a "remember me" cookie may name the user.
      ['other cookies beside an absent cookie scope', '{ users { id } }', [['cookie', 'remember=alice']]],
    ] as Array<[string, string, Array<[string, string]>]>)('passes %s', (_name, query, headers) => {
      const current = config(scoped);
      expect(classify(checked(query, current), { method: 'POST', headers }, current, schema)).toEqual({ kind: 'pass', reason: 'credentials-outside-scope' });
    });

    it.each([
      ['Authorization with a cookie beside it', '{ todos { id } }', [['authorization', 'Bearer a-token-0123456789'], ['cookie', 'sid=a']]],
      ['the scope\'s own cookie sent empty, alone', '{ users { id } }', [['cookie', 'session=']]],
      ['other cookies beside the scope\'s own cookie', '{ users { id } }', [['cookie', 'theme=dark; session=s1']]],
      ['one value of a combined scope, with Authorization', '{ todo(id: "1") { id } }', [['authorization', 'Bearer a-token-0123456789'], ['x-team', 'red']]],
      ['no credentials at all', '{ todos { id } }', []],
      ['the tenant and Authorization under TENANT+AUTH, with a cookie', '{ me { id } }', [['x-tenant', 'acme'], ['authorization', 'Bearer a-token-0123456789'], ['cookie', 'sid=a']]],
    ] as Array<[string, string, Array<[string, string]>]>)('caches %s', (_name, query, headers) => {
      const current = config(scoped);
      expect(classify(checked(query, current), { method: 'POST', headers }, current, schema)).toMatchObject({ kind: 'query' });
    });

    it('caches them when cache.publicForCredentialedRequests is on', () => {
      const current = config({ ...scoped, cache: { publicForCredentialedRequests: true } });
      const headers: Array<[string, string]> = [['cookie', 'sid=a']];
      expect(classify(checked('{ todos { id } }', current), { method: 'POST', headers }, current, schema)).toMatchObject({ kind: 'query' });
    });
  });

  describe('a scope value some origin may read otherwise', () => {
    const scoped = {
      scopes: {
        LOCALE: 'cookie:locale',
        TEAM: 'header:x-team|cookie:team',
        USER: { definition: 'cookie:token', jwt: { claim: 'sub', algorithms: ['HS256'], secret: 'a-secret-of-at-least-32-characters!!' } },
      },
      rules: [
        { types: { Query: ['todos'] }, maxAge: 60, scope: 'LOCALE' },
        { types: { Query: ['users'] }, maxAge: 60, scope: 'TEAM' },
        { types: { Query: ['me'] }, maxAge: 60, scope: 'USER' },
      ],
    };

    it.each([
      ['two values in one line', '{ todos { id } }', [['cookie', 'locale=fr; locale=de']], 'LOCALE: cookie locale'],
      ['an empty value and another', '{ todos { id } }', [['cookie', 'locale=; locale=fr']], 'LOCALE: cookie locale'],
      ['values across two cookie lines', '{ todos { id } }', [['cookie', 'locale=fr'], ['cookie', 'a=1; locale=de']], 'LOCALE: cookie locale'],
      ["a combined scope's cookie", '{ users { id } }', [['x-team', 'red'], ['cookie', 'team=1; team=2']], 'TEAM: cookie team'],
      ["a JWT scope's cookie", '{ me { id } }', [['cookie', 'token=a.b.c; token=d.e.f']], 'USER: cookie token'],
      ['under a name PHP and older Rack decode to it, alone', '{ todos { id } }', [['cookie', 'l%6Fcale=de']], 'LOCALE: cookie locale'],
      ['under a name PHP and older Rack decode to it, beside it', '{ todos { id } }', [['cookie', 'locale=fr; l%6Fcale=fr']], 'LOCALE: cookie locale'],
      ["under a name PHP reads as a JWT scope's cookie", '{ me { id } }', [['cookie', 'token[]=a.b.c']], 'USER: cookie token'],
      ['in another case, which ASP.NET reads as it', '{ todos { id } }', [['cookie', 'Locale=de']], 'LOCALE: cookie locale'],
      ['after a comma, where older Rack and ASP.NET Core split', '{ todos { id } }', [['cookie', 'a=1,locale=de']], 'LOCALE: cookie locale'],
      ["a scope's header with underscores alone, which CGI-style origins read as it", '{ users { id } }', [['x_team', 'red']], 'TEAM: header x-team'],
      ["a scope's header with underscores beside it", '{ users { id } }', [['x-team', 'red'], ['x_team', 'blue']], 'TEAM: header x-team'],
    ] as Array<[string, string, Array<[string, string]>, string]>)('passes %s, whichever one the origin reads', (_name, query, headers, detail) => {
      const current = config(scoped);
      expect(classify(checked(query, current), { method: 'POST', headers }, current, schema)).toEqual({ kind: 'pass', reason: 'ambiguous-scope-value', detail });
    });

    it.each([
      ['an identical repeat', [['cookie', 'locale=fr; locale=fr']]],
      ['an identical repeat across lines', [['cookie', 'locale=fr'], ['cookie', 'locale=fr']]],
      ['other cookies repeated', [['cookie', 'a=1; locale=fr; a=2']]],
      ['a name that decodes to another cookie', [['cookie', 'loc%61l=1; locale=fr']]],
      ['other headers with underscores', [['x_other', '1'], ['x_tea', '2'], ['x_teams', '3']]],
    ] as Array<[string, Array<[string, string]>]>)('caches %s', (_name, headers) => {
      const current = config(scoped);
      expect(classify(checked('{ todos { id } }', current), { method: 'POST', headers }, current, schema)).toMatchObject({ kind: 'query' });
      expect(classify(checked('{ users { id } }', current), { method: 'POST', headers: [['x-team', 'red'], ...headers] }, current, schema)).toMatchObject({ kind: 'query' });
    });
  });

  it('classifies a cacheable query with its policy', () => {
    expect(classify(checked('{ todos { id } }'), post, config(), schema)).toMatchObject({ kind: 'query', policy: { maxAge: 60, swr: 0, scopes: [] } });
  });

  it("caches urql's default Accept, __typename, and introspection a rule names", () => {
    const urql = [['accept', 'application/graphql-response+json, application/json, text/event-stream, multipart/mixed']] as Array<[string, string]>;
    expect(classify(checked('{ todos { id } }'), { method: 'POST', headers: urql }, config(), schema)).toMatchObject({ kind: 'query' });
    expect(classify(checked('{ __typename todos { id } }'), post, config(), schema)).toMatchObject({ kind: 'query' });
    const named = config({ rules: [{ types: { Query: ['__schema'] }, maxAge: 60 }] });
    expect(classify(checked('{ __schema { queryType { name } } }', named), post, named, schema)).toMatchObject({ kind: 'query' });
  });

  it("applies the GET-mutation 405 before a client's streaming Accept", () => {
    const verdict = classify(checked('mutation { addTodo(title: "x") { id } }'), { method: 'GET', headers: [['accept', 'text/event-stream']] }, config(), schema);
    expect(verdict).toMatchObject({ errorCode: 'METHOD_NOT_ALLOWED' });
  });
});

describe('cachePolicyFor', () => {
  // The scope audit: the rule was written before the origin's deploy gave it the field; svc-cache's
  // schema still lacked it, the scoped rule matched nothing, and the answer went to PUBLIC under
  // `[Query]`, where another team's request got it.
  it('applies a scoped rule on a field the schema lacks yet to a query selecting it', () => {
    const current = config({
      scopes: { TEAM: 'header:x-team' },
      rules: [{ types: { Query: ['teamBalance'] }, maxAge: 60, scope: 'TEAM' }, { types: ['Query'], maxAge: 60 }],
    });
    for (const query of ['{ teamBalance }', '{ todos { id } teamBalance }', '{ ... on Query { teamBalance } }']) {
      expect(cachePolicyFor(current.rules, selectionOf(schema, parse(query)))?.scopes).toEqual(['TEAM']);
    }
  });
});

describe('scopeAndKey', () => {
  const scoped = config({
    scopes: { AUTHENTICATED: 'header:authorization' },
    rules: [{ types: ['Query'], maxAge: 60, scope: 'AUTHENTICATED', description: 'all' }],
  });
  const selected = checked('{ me { id } }', scoped).selected;
  const policy = cachePolicyFor(scoped.rules, selectionOf(schema, selected.document))!;
  const secret = Buffer.from('k');
  const target = { host: 'a.test', endpoint: '/graphql', parameters: '', keyedHeaders: '' };

  it('keys per scope value and names the bucket without the raw value', () => {
    const alice = scopeAndKey(policy, selected, { canonicalVariables: '{}', orderedVariables: '{}', canonicalExtensions: '', otherMembers: '' }, schema, target, [['authorization', 'Bearer alice']], scoped, secret, new Map());
    const bob = scopeAndKey(policy, selected, { canonicalVariables: '{}', orderedVariables: '{}', canonicalExtensions: '', otherMembers: '' }, schema, target, [['authorization', 'Bearer bob']], scoped, secret, new Map());
    expect(alice.key).not.toBe(bob.key);
    expect(alice.bucket).toMatch(/^AUTHENTICATED:[A-Za-z0-9_-]{43}$/);
    expect(alice.key.startsWith(`${alice.bucket}/`)).toBe(true);
    expect(JSON.stringify(alice)).not.toContain('alice');
    expect([alice.varyNames, alice.scopeHeaders, scopeExplanation(policy, alice.bucket, scoped)]).toEqual([
      ['authorization'],
      [['cache-control', 'private, no-cache'], ['vary', 'authorization']],
      { scope: 'AUTHENTICATED', bucket: alice.bucket, rules: 'all' },
    ]);
  });

  it('names buckets by a keyed hash pinned here, so that a change of it is deliberate (README, Upgrading)', () => {
    const definitions = { TEAM: 'header:x-team', SESSION: 'cookie:session|header:authorization', USER: 'header:authorization' };
    const headers: Array<[string, string]> = [['x-team', 'team-12345'], ['cookie', 'a=1; session=xyz']];
    const secret32 = Buffer.alloc(32, 7);
    const identities = new Map([['USER', 'user-1']]);
    expect(scopeBucketKey(['TEAM', 'SESSION', 'USER'], definitions, headers, secret32, identities)).toBe('TEAM+SESSION+USER:_d97eSdhr3YAOgLZNwEMJT0nVx0-bRZIAEDTNgXRU-U');
    expect(scopeBucketKey(['SESSION'], definitions, [], secret32, identities)).toBe('SESSION:gz5LnxKkjsoa0B3GuGchK2eholgCfENj9LQsAT_hkLM');
    const jwt = config({
      scopes: { USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['HS256'], secret: 's'.repeat(32), issuer: 'https://auth.test', audience: 'api' } } },
    }).scopes;
    expect(scopeBucketKey(['USER'], jwt, [], secret32, identities)).toBe('USER:yXdFEeCfjlrrI9s1vt0zLBsOkvI6UD_NdaGKyAaWslY');
  });

  // The review: a digest of the whole parsed definition changed with its spelling, a clock
  // tolerance, or any setting with a default a later version adds.
  it('keeps the bucket when only what names no one changes: spelling, algorithms, clock tolerance', () => {
    const secret = Buffer.alloc(32, 7);
    const identities = new Map([['USER', 'digest-of-42']]);
    const user = (jwt: Record<string, unknown>, definition = 'header:authorization') =>
      scopeBucketKey(['USER'], config({ scopes: { USER: { definition, jwt: { claim: 'sub', algorithms: ['HS256'], secret: 's'.repeat(32), ...jwt } } } }).scopes, [], secret, identities);
    const plain = user({});
    expect([user({ algorithms: ['HS256', 'HS512'] }), user({ clockToleranceSeconds: 30 }), user({}, 'header:Authorization')]).toEqual([plain, plain, plain]);
    expect([user({ issuer: 'https://other.test' }), user({ audience: 'other' }), user({ secret: 't'.repeat(32) }), user({ claim: 'org.id' })].filter((bucket) => bucket === plain)).toEqual([]);
    const team = (definition: string) => scopeBucketKey(['TEAM'], { TEAM: definition }, [['x-team', 'a']], secret, new Map());
    expect(team(' header:X-Team ')).toBe(team('header:x-team'));
  });

  // The scope audit: after a reload moved USER from the `org.id` claim to `sub`, a token whose `sub`
  // was 42 got the answer stored for org 42's member, from the bucket of the same name and value.
  it('names another bucket for the same values once the scope is defined otherwise', () => {
    const secret = Buffer.alloc(32, 7);
    const jwt = (claim: string) => config({ scopes: { USER: { definition: 'header:authorization', jwt: { claim, algorithms: ['HS256'], secret: 's'.repeat(32) } } } }).scopes;
    const identities = new Map([['USER', 'digest-of-42']]);
    const byOrg = scopeBucketKey(['USER'], jwt('org.id'), [], secret, identities);
    expect(scopeBucketKey(['USER'], jwt('sub'), [], secret, identities)).not.toBe(byOrg);
    expect(scopeBucketKey(['USER'], jwt('org.id'), [], secret, identities)).toBe(byOrg);
    const both: Array<[string, string]> = [['x-team', 'a'], ['x-org', 'a']];
    expect(scopeBucketKey(['TEAM'], { TEAM: 'header:x-team' }, both, secret, new Map())).not.toBe(scopeBucketKey(['TEAM'], { TEAM: 'header:x-org' }, both, secret, new Map()));
  });

  it('keys the canonical variables text, host and endpoint, but not Accept', () => {
    const key = (variables: string, at = target, headers: Array<[string, string]> = [['authorization', 'a']], extensions = '') =>
      scopeAndKey(policy, selected, { canonicalVariables: variables, orderedVariables: variables, canonicalExtensions: extensions, otherMembers: '' }, schema, at, headers, scoped, secret, new Map()).key;
    expect(key('{"a":1}')).not.toBe(key('{"a":1.0}'));
    expect(key('{"a":1}')).not.toBe(key('{"a":2}'));
    expect(key('{}', { host: 'b.test', endpoint: '/graphql', parameters: '', keyedHeaders: '' })).not.toBe(key('{}'));
    expect(key('{}', { host: 'a.test', endpoint: '/t/acme/graphql', parameters: '', keyedHeaders: '' })).not.toBe(key('{}'));
    expect(key('{}', { ...target, parameters: 'tenant=acme' })).not.toBe(key('{}', { ...target, parameters: 'tenant=globex' }));
    expect(key('{}', target, undefined, '{"tenant":"acme"}')).not.toBe(key('{}', target, undefined, '{"tenant":"globex"}'));
    expect(key('{}', { ...target, parameters: 'a=1' })).not.toBe(key('{}', target, undefined, 'a=1'));
    expect(key('{}', target, [['authorization', 'a'], ['accept', 'application/json']])).toBe(key('{}'));
  });
});

describe('lookupOrCoalesce', () => {
  const entry = (storedAt: number, maxAge: number, swr = 0) => ({ body: Buffer.from('{}'), encoding: 'identity' as const, identityLength: 2, contentType: 'application/json', headers: [], storedAt, maxAge, swr, staleIfError: 0 });

  async function withStored(storedAt: number, maxAge: number, swr: number) {
    const store = new MemoryStore({ maxBytes: 1024 * 1024 });
    const { mark } = await store.lookup('k');
    await store.store('k', entry(storedAt, maxAge, swr), { tags: [], ttlSeconds: 3600, mark });
    return store;
  }

  /** A coalescer that says when a request starts waiting for a leader (so no test sleeps for it). */
  function watchedCoalescer() {
    const coalescer = new MissCoalescer();
    const follow = coalescer.follow.bind(coalescer);
    const following = new Promise<void>((resolve) => {
      coalescer.follow = (key, waitMs) => {
        resolve();
        return follow(key, waitMs);
      };
    });
    return { coalescer, following };
  }

  it('hits a fresh entry, leads the fetch of a missing one, and follows no one without waiting', async () => {
    const store = await withStored(1_000, 60, 0);
    const coalescer = new MissCoalescer();
    const deps = { store, coalescer, now: () => 2_000, coalesceWaitMs: 0, ruleSwr: 30, onCoalesced: () => {}, meanwhile: () => {} };
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'hit', entry: { storedAt: 1_000 } });
    const miss = await lookupOrCoalesce('other', deps);
    expect(miss).toMatchObject({ kind: 'miss', leadership: { release: expect.any(Function) } });
    expect(await lookupOrCoalesce('other', deps)).toMatchObject({ kind: 'miss', leadership: undefined });
  });

  it('serves a stale entry within swr while another request refreshes it', async () => {
    const store = await withStored(0, 10, 30);
    const coalescer = new MissCoalescer();
    const deps = { store, coalescer, now: () => 20_000, coalesceWaitMs: 0, ruleSwr: 30, onCoalesced: () => {}, meanwhile: () => {} };
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'miss', leadership: { release: expect.any(Function) } });
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'hit', entry: { storedAt: 0 } });
  });

  it("keeps to the rules' swr when a reload shortened it below the entry's own", async () => {
    const store = await withStored(0, 10, 30);
    const deps = { store, coalescer: new MissCoalescer(), now: () => 20_000, coalesceWaitMs: 0, ruleSwr: 5, onCoalesced: () => {}, meanwhile: () => {} };
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'miss', leadership: { release: expect.any(Function) } });
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'miss', leadership: undefined });
    expect(await lookupOrCoalesce('k', { ...deps, now: () => 14_000 })).toMatchObject({ kind: 'hit', entry: { storedAt: 0 } });
  });

  it('answers a follower from the entry its leader stored, and reports it as coalesced', async () => {
    const store = new MemoryStore({ maxBytes: 1024 * 1024 });
    let coalesced = 0;
    const { coalescer, following } = watchedCoalescer();
    const deps = { store, coalescer, now: () => 2_000, coalesceWaitMs: 60_000, ruleSwr: 30, onCoalesced: () => (coalesced += 1), meanwhile: () => {} };
    const leader = await lookupOrCoalesce('k', deps);
    if (leader.kind !== 'miss' || !leader.leadership) throw new Error('the first request should lead');
    const follower = lookupOrCoalesce('k', deps);
    await following;
    await store.store('k', entry(1_500, 60), { tags: [], ttlSeconds: 3600, mark: leader.mark });
    leader.leadership.release();
    expect(await follower).toMatchObject({ kind: 'hit', entry: { storedAt: 1_500 } });
    expect(coalesced).toBe(1);
  });

  it('does not count a follower whose leader stored nothing as coalesced', async () => {
    const store = new MemoryStore({ maxBytes: 1024 * 1024 });
    let coalesced = 0;
    const { coalescer, following } = watchedCoalescer();
    const deps = { store, coalescer, now: () => 2_000, coalesceWaitMs: 60_000, ruleSwr: 30, onCoalesced: () => (coalesced += 1), meanwhile: () => {} };
    const leader = await lookupOrCoalesce('k', deps);
    if (leader.kind !== 'miss' || !leader.leadership) throw new Error('the first request should lead');
    const follower = lookupOrCoalesce('k', deps);
    await following;
    leader.leadership.release();
    expect(await follower).toMatchObject({ kind: 'miss', leadership: undefined });
    expect(coalesced).toBe(0);
  });

  it('says the store is unavailable rather than throwing', async () => {
    const store = new MemoryStore({ maxBytes: 1024 });
    store.lookup = () => Promise.reject(new Error('redis down'));
    expect(await lookupOrCoalesce('k', { store, coalescer: new MissCoalescer(), now: () => 0, coalesceWaitMs: 0, ruleSwr: 0, onCoalesced: () => {}, meanwhile: () => {} })).toEqual({ kind: 'unavailable', error: 'redis down' });
  });

  it('runs the work a MISS needs while the store answers, and not when the store answers at once', async () => {
    const store = await withStored(1_000, 60, 0);
    const events: string[] = [];
    const meanwhile = () => events.push('meanwhile');
    const stored = store.lookup.bind(store);
    store.lookup = (key) => {
      events.push('asked');
      return stored(key).then((found) => {
        events.push('answered');
        return found;
      });
    };
    const deps = { store, coalescer: new MissCoalescer(), now: () => 2_000, coalesceWaitMs: 0, ruleSwr: 30, onCoalesced: () => {}, meanwhile };
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'hit' });
    expect(events).toEqual(['asked', 'meanwhile', 'answered']);

    events.length = 0;
    const answered = await stored('k');
    // As the local cache answers a lookup it holds: the Lookup itself, not a promise.
    const atOnce: CacheStore = store;
    atOnce.lookup = () => answered;
    expect(await lookupOrCoalesce('k', deps)).toMatchObject({ kind: 'hit' });
    expect(events).toEqual([]);
  });
});
