import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import Negotiator from 'negotiator';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { ECHO_GRAPHQL_PATHS, echoAnswer, REFLECTING_PATH, RESPONSE_VARIABLE, startEchoOrigin, type EchoOrigin, type EchoRequest } from '../support/echoOrigin.js';
import { readResponse } from '../support/rawHttp.js';
import { startRedisServer, type RedisServer } from '../support/redis.js';
import { testConfig, type ConfigInput } from '../support/stack.js';

/**
 * Issue 12, "The property that proves it": random requests across every dimension of the issue
 * (paths, hosts, Accept variants, repeated parameters, number spellings, credentials and cookies,
 * bytes that are not UTF-8, batches, APQ, the origin's caching headers) interleaved with mutations
 * and purges, through the gateway and the sidecar to the echo origin (test/support/echoOrigin.ts).
 *
 * Invariant: each HIT's body is what the origin answers that very request at that moment, computed
 * by `echoAnswer` with the origin's current version, and comes in a content type the client accepts.
 * A MISS carries the origin's own answer (which also checks that the test's idea of the request
 * matches what reached the origin).
 */

const PURGE_TOKEN = 'echo-property-purge-token-0123456789';

const CONFIG = {
  endpoints: [...ECHO_GRAPHQL_PATHS],
  scopes: { AUTHENTICATED: 'header:authorization', SESSION: 'cookie:session' },
  rules: [
    { description: 'every query, shared', types: ['Query'], maxAge: 60 },
    { description: 'per user', types: { Query: ['viewer'] }, maxAge: 60, scope: 'AUTHENTICATED' },
    { description: 'per session', types: { Query: ['session'] }, maxAge: 60, scope: 'SESSION' },
  ],
  purge: { tokens: [PURGE_TOKEN] },
};

const VARIANTS = [
  { store: 'memory', runs: 130 },
  { store: 'redis', runs: 70 },
] as const;
const MAX_STEPS_PER_RUN = 10;

/** A query the generator asks, with its variables as raw JSON text (numbers spelt as given). */
interface Operation {
  query: string;
  variables?: string;
}

const NUMBER_SPELLINGS = ['1', '1.0', '1e0', '9007199254740993', '9007199254740992'];

const OPERATIONS: fc.Arbitrary<Operation> = fc.oneof(
  fc.constant({ query: '{ echo { id text } }' }),
  fc.constant({ query: '{ e: echo { id text } }' }),
  fc.constantFrom(...NUMBER_SPELLINGS).map((n) => ({ query: 'query Num($n: Float) { echo(n: $n) { id text } }', variables: `{"n":${n}}` })),
  fc.constantFrom('a', 'b').map((s) => ({ query: 'query Str($s: String) { echo(s: $s) { id text } }', variables: `{"s":"${s}"}` })),
  // A custom scalar's object, its members in either order: the origin's code may read that order.
  fc.constantFrom('{"a":1,"b":[{"d":2,"c":3}]}', '{"b":[{"d":2,"c":3}],"a":1}', '{"a":1,"b":[{"c":3,"d":2}]}').map((j) => ({
    query: 'query Json($j: JSON) { echo(j: $j) { id text } }',
    variables: `{"j":${j}}`,
  })),
  fc.constant({ query: '{ viewer { id text } }' }),
  fc.constant({ query: '{ session { id text } }' }),
  fc.constant({ query: '{ echo { id text } session { id text } }' }),
);

/** The default Accept of urql (@urql/core 6), which lists streaming types after the JSON ones. */
const URQL_ACCEPT = 'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed';

interface Read {
  kind: 'read';
  method: 'GET' | 'POST';
  host: string;
  path: string;
  accept: string | null;
  operation: Operation;
  apq: 'none' | 'hash-only' | 'hash+query';
  /** The query parameter given again: in the URL of a GET, or in the URL of a POST beside its body. */
  repeat: 'none' | 'same' | 'other';
  authorization: string | null;
  cookie: string | null;
  xUser: string | null;
  /** `echoResponse` in the variables: the headers the origin reads and the response headers it sends. */
  response: string | null;
  /** A POST whose string variable holds this byte, not UTF-8. */
  badByte: number | null;
  /** A POST of a JSON array: this operation, then another. */
  batchWith: Operation | null;
  /** A member of `extensions` besides `persistedQuery`, which the origin reads. */
  tenantExtension: string | null;
  /** A URL parameter besides GraphQL's, which the origin reads. */
  tenantParameter: string | null;
  /** A forwarding header (`X-Forwarded-Host`, `-Prefix`, `Forwarded`), which an origin that trusts its proxy builds links with. */
  forwarding: [string, string] | null;
}

interface Bump {
  kind: 'bump';
  path: string;
  accept: string | null;
  /** Sent in a batch after a query, as Apollo's BatchHttpLink would. */
  batched: boolean;
}

interface Purge {
  kind: 'purge';
  mutation: 'mutation { _purgeAll }' | 'mutation { _purgeEcho }';
}

type Step = Read | Bump | Purge;

const weighted = <T,>(pairs: Array<[number, fc.Arbitrary<T>]>) => fc.oneof(...pairs.map(([weight, arbitrary]) => ({ weight, arbitrary })));
const mostly = <T,>(usual: T, others: fc.Arbitrary<T>) => weighted([[3, fc.constant(usual)], [1, others]]);

const acceptArbitrary = fc.constantFrom<string | null>(URQL_ACCEPT, '*/*', 'application/json', 'application/graphql-response+json', 'text/event-stream', null);
const pathArbitrary = weighted([[4, fc.constant('/graphql')], [2, fc.constantFrom('/t/acme/graphql', '/t/globex/graphql')], [1, fc.constant(REFLECTING_PATH)]]);

/** What the origin is asked to read and send: one directive, or two, of those echoOrigin.ts knows. */
const RESPONSE_DIRECTIVES = [
  'reads=cookie',
  'reads=x-user',
  'reads=cookie|x-user',
  'cc=max-age=0',
  'cc=no-store',
  'cc=private',
  'cc=no-cache',
  'cc=max-age=60',
  'cc=s-maxage=60',
  'cc=public, max-age=60, s-maxage=0',
  'expires=0',
  'expires=past',
  'expires=future',
  'pragma',
  'set-cookie',
  'vary=accept',
  'vary=*',
  'stream=sse',
  'stream=multipart',
];
const directiveArbitrary = fc.constantFrom(...RESPONSE_DIRECTIVES);
const responseArbitrary: fc.Arbitrary<string | null> = weighted<string | null>([
  [2, fc.constant(null)],
  [2, directiveArbitrary],
  [1, fc.tuple(directiveArbitrary, directiveArbitrary).map((pair) => pair.join(';'))],
]);

const readFields = {
  method: fc.constantFrom<'GET' | 'POST'>('GET', 'POST'),
  host: mostly('api.example', fc.constantFrom('API.Example', 'api.example:80', 'other.example')),
  path: pathArbitrary,
  accept: acceptArbitrary,
  operation: OPERATIONS,
  apq: weighted<Read['apq']>([[3, fc.constant('none')], [1, fc.constantFrom('hash-only', 'hash+query')]]),
  repeat: mostly<Read['repeat']>('none', fc.constantFrom('same', 'other')),
  authorization: mostly<string | null>(null, fc.constantFrom('Bearer alice', 'Bearer bob')),
  cookie: mostly<string | null>(null, fc.constantFrom('session=s1', 'session=s2', 'session=s1; sid=alice', 'sid=bob')),
  xUser: mostly<string | null>(null, fc.constantFrom('alice', 'bob')),
  response: responseArbitrary,
  badByte: weighted<number | null>([[6, fc.constant(null)], [1, fc.constantFrom(0xfe, 0xff)]]),
  batchWith: weighted<Operation | null>([[6, fc.constant(null)], [1, OPERATIONS]]),
  tenantExtension: mostly<string | null>(null, fc.constantFrom('acme', 'globex')),
  tenantParameter: mostly<string | null>(null, fc.constantFrom('acme', 'globex')),
  forwarding: mostly<[string, string] | null>(
    null,
    fc.constantFrom<[string, string]>(
      ['x-forwarded-host', 'evil.example'],
      ['x-forwarded-host', 'good.example'],
      ['x-forwarded-prefix', '/evil'],
      ['forwarded', 'proto=https'],
      ['forwarded', 'for=192.0.2.60;proto=https'],
    ),
  ),
};
type ReadFields = Omit<Read, 'kind'>;

/** Bytes that are not UTF-8, batches, and requests to the reflecting path travel in a POST body. */
function asRead(fields: ReadFields): Read {
  const post = fields.badByte !== null || fields.batchWith !== null || fields.path === REFLECTING_PATH;
  return { kind: 'read', ...fields, method: post ? 'POST' : fields.method };
}

const readArbitrary: fc.Arbitrary<ReadFields> = fc.record(readFields);

/** One dimension of a request changed: the request next to it that the cache must tell apart, or not. */
const tweakArbitrary: fc.Arbitrary<Partial<ReadFields>> = fc.oneof(
  ...Object.entries(readFields).map(([name, arbitrary]) =>
    (arbitrary as fc.Arbitrary<unknown>).map((value) => ({ [name]: value }) as Partial<ReadFields>),
  ),
);

/**
 * A run: a few requests, then steps that send one of them again, mostly with one dimension changed,
 * or a mutation, or a purge. Sending near neighbours of earlier requests is what makes HITs, and
 * wrong HITs, likely.
 */
type Choice =
  | { kind: 'read'; base: number; tweak: Partial<ReadFields> | null }
  | Bump
  | Purge;

const choiceArbitrary: fc.Arbitrary<Choice> = weighted<Choice>([
  [10, fc.record({ kind: fc.constant('read' as const), base: fc.nat(), tweak: fc.option<Partial<ReadFields>, null>(tweakArbitrary, { freq: 2, nil: null }) })],
  [2, fc.record({ kind: fc.constant('bump' as const), path: fc.constantFrom(...ECHO_GRAPHQL_PATHS), accept: acceptArbitrary, batched: fc.boolean() })],
  [1, fc.record({ kind: fc.constant('purge' as const), mutation: fc.constantFrom('mutation { _purgeAll }' as const, 'mutation { _purgeEcho }' as const) })],
]);

const runArbitrary: fc.Arbitrary<Step[]> = fc
  .record({
    pool: fc.array(readArbitrary, { minLength: 1, maxLength: 3 }),
    choices: fc.array(choiceArbitrary, { minLength: 1, maxLength: MAX_STEPS_PER_RUN }),
  })
  .map(({ pool, choices }) => [
    ...pool.map(asRead),
    ...choices.map((choice): Step =>
      choice.kind === 'read' ? asRead({ ...pool[choice.base % pool.length]!, ...choice.tweak }) : choice,
    ),
  ]);

/** A request on the wire: header lines in order, names as sent. */
interface WireRequest {
  method: string;
  host: string;
  target: string;
  lines: Array<[string, string]>;
  body: Buffer;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const OTHER_QUERY = '{ viewer { id text } }';

/** The operation's variables as sent, with the response the origin is asked for added. */
function variablesText(operation: Operation, response: string | null): string | undefined {
  if (response === null) return operation.variables;
  const asked = `"${RESPONSE_VARIABLE}":${JSON.stringify(response)}`;
  return operation.variables === undefined ? `{${asked}}` : `${operation.variables.slice(0, -1)},${asked}}`;
}

function memberJson(operation: Operation, apq: Read['apq'], response: string | null, tenant: string | null = null): string {
  const parts: string[] = [];
  const variables = variablesText(operation, response);
  if (apq !== 'hash-only') parts.push(`"query":${JSON.stringify(operation.query)}`);
  if (variables !== undefined) parts.push(`"variables":${variables}`);
  const extensions = extensionsJson(operation, apq, tenant);
  if (extensions !== undefined) parts.push(`"extensions":${extensions}`);
  return `{${parts.join(',')}}`;
}

function extensionsJson(operation: Operation, apq: Read['apq'], tenant: string | null): string | undefined {
  const members: string[] = [];
  if (tenant !== null) members.push(`"tenant":${JSON.stringify(tenant)}`);
  if (apq !== 'none') members.push(`"persistedQuery":{"version":1,"sha256Hash":"${sha256(operation.query)}"}`);
  return members.length === 0 ? undefined : `{${members.join(',')}}`;
}

function readWire(read: Read): WireRequest {
  const url = new URL(read.path, 'http://gateway');
  const repeated = read.repeat === 'same' ? read.operation.query : read.repeat === 'other' ? OTHER_QUERY : undefined;
  let body = Buffer.alloc(0);
  if (read.method === 'GET') {
    if (read.apq !== 'hash-only') url.searchParams.append('query', read.operation.query);
    if (repeated !== undefined && read.apq !== 'hash-only') url.searchParams.append('query', repeated);
    const variables = variablesText(read.operation, read.response);
    if (variables !== undefined) url.searchParams.append('variables', variables);
    const extensions = extensionsJson(read.operation, read.apq, read.tenantExtension);
    if (extensions !== undefined) url.searchParams.append('extensions', extensions);
  } else {
    if (read.path === REFLECTING_PATH) url.searchParams.append('msg', 'hello');
    if (repeated !== undefined) url.searchParams.append('query', repeated);
    const member = memberJson(read.operation, read.apq, read.response, read.tenantExtension);
    body = Buffer.from(read.batchWith === null ? member : `[${member},${memberJson(read.batchWith, 'none', null)}]`);
    if (read.badByte !== null) {
      body = Buffer.concat([
        Buffer.from(`{"query":${JSON.stringify('query Str($s: String) { echo(s: $s) { id text } }')},"variables":{"s":"`),
        Buffer.from([read.badByte]),
        Buffer.from('"}}'),
      ]);
    }
  }
  if (read.tenantParameter !== null) url.searchParams.append('tenant', read.tenantParameter);
  const lines: Array<[string, string]> = [];
  if (read.method === 'POST') lines.push(['content-type', 'application/json']);
  if (read.accept !== null) lines.push(['accept', read.accept]);
  if (read.authorization !== null) lines.push(['authorization', read.authorization]);
  if (read.cookie !== null) lines.push(['cookie', read.cookie]);
  if (read.xUser !== null) lines.push(['x-user', read.xUser]);
  if (read.forwarding !== null) lines.push(read.forwarding);
  return { method: read.method, host: read.host, target: `${url.pathname}${url.search}`, lines, body };
}

function postWire(path: string, body: string, lines: Array<[string, string]>): WireRequest {
  return { method: 'POST', host: 'api.example', target: path, lines: [['content-type', 'application/json'], ...lines], body: Buffer.from(body) };
}

function stepWire(step: Step): WireRequest {
  switch (step.kind) {
    case 'read':
      return readWire(step);
    case 'bump': {
      const bump = '{"query":"mutation Bump { bump { id text } }"}';
      const body = step.batched ? `[{"query":"{ echo { id text } }"},${bump}]` : bump;
      return postWire(step.path, body, step.accept === null ? [] : [['accept', step.accept]]);
    }
    case 'purge':
      return postWire('/graphql', JSON.stringify({ query: step.mutation }), [['accept', 'application/json'], ['svc-purge-token', PURGE_TOKEN]]);
  }
}

/**
 * The request as the origin gets it: on a GraphQL endpoint a registered hash stands for its query,
 * which svc-cache fills in (a hash-only GET then carries no other query parameter); a path that is
 * not a GraphQL endpoint gets the request untouched.
 */
function asOriginSees(read: Read): EchoRequest {
  const resolved: Read =
    read.apq === 'hash-only' && read.path !== REFLECTING_PATH
      ? { ...read, apq: 'hash+query', repeat: read.method === 'GET' ? 'none' : read.repeat }
      : read;
  const wire = readWire(resolved);
  const headers: Record<string, string> = { host: wire.host };
  for (const [name, value] of wire.lines) headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  return { method: wire.method, target: wire.target, headers, body: wire.body };
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

function send(gatewayUrl: string, wire: WireRequest): Promise<Answer> {
  const headers = [['host', wire.host], ...wire.lines, ['content-length', String(wire.body.length)]].flat();
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${gatewayUrl}${wire.target}`, { method: wire.method, headers }, (response) => {
      readResponse(response).then(({ status, headers: joined, body }) => resolve({ status, headers: joined, text: body.toString('utf8') }), reject);
    });
    outgoing.on('error', reject);
    outgoing.end(wire.body);
  });
}

function accepts(accept: string | null, contentType: string | undefined): boolean {
  const essence = contentType?.split(';')[0]?.trim().toLowerCase();
  return essence !== undefined && new Negotiator({ headers: { accept: accept ?? '*/*' } }).mediaTypes([essence]).length > 0;
}

function describeWire(wire: WireRequest): string {
  const lines = [`host: ${wire.host}`, ...wire.lines.map(([name, value]) => `${name}: ${value}`)];
  const body = wire.body.toString('utf8') === wire.body.toString('latin1') ? wire.body.toString('utf8') : `(base64) ${wire.body.toString('base64')}`;
  return `${wire.method} ${wire.target}\n  ${lines.join('\n  ')}\n  body: ${body}`;
}

function describeAnswer(answer: Answer): string {
  const headers = ['svc-cache', 'content-type', 'vary', 'cache-control'].map((name) => `${name}: ${answer.headers[name] ?? '-'}`).join('; ');
  return `${answer.status} (${headers}) ${answer.text}`;
}

/** What is wrong with a read's answer, if anything. */
function readProblem(read: Read, answer: Answer, version: number): string | undefined {
  const expected = echoAnswer(asOriginSees(read), version, 0);
  const status = answer.headers['svc-cache'];
  const origin = `the origin answers it now (version ${version})${expected.reusable ? '' : ', with a number new on every call (not reusable)'}:\n  ${expected.status} ${expected.body}`;
  if (status === 'HIT') {
    if (!expected.reusable) return `HIT of an answer a shared cache must not reuse; ${origin}`;
    if (answer.status !== expected.status || answer.text !== expected.body) return `HIT with another body than the origin's; ${origin}`;
    if (!accepts(read.accept, answer.headers['content-type'])) return `HIT in a content type the client does not accept; ${origin}`;
  }
  if (status === 'MISS' && expected.reusable && answer.text !== expected.body) {
    return `MISS with another body than the origin's (is the request forwarded as sent?); ${origin}`;
  }
  return undefined;
}

interface Target {
  url: string;
  origin: EchoOrigin;
  sidecar: Sidecar;
}

interface Tally {
  runs: number;
  requests: number;
  statuses: Record<string, number>;
}

async function runSteps(target: Target, steps: readonly Step[], tally: Tally): Promise<void> {
  for (const [index, step] of steps.entries()) {
    const wire = stepWire(step);
    const answer = await send(target.url, wire);
    tally.requests += 1;
    const status = answer.headers['svc-cache'] ?? `no svc-cache header, ${answer.status}`;
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
    const problem =
      step.kind === 'read'
        ? readProblem(step, answer, target.origin.version)
        : step.kind === 'purge' && answer.status !== 200
          ? 'a purge with the token did not answer 200'
          : undefined;
    if (problem !== undefined) {
      throw new Error(
        `step ${index + 1} of ${steps.length}: ${problem}\nrequest:\n${describeWire(wire)}\nsvc-cache answered:\n  ${describeAnswer(answer)}`,
      );
    }
  }
}

async function startEchoStack(store: 'memory' | 'redis'): Promise<{ target: Target; gateway: Gateway; close(): Promise<void> }> {
  const redis: RedisServer | undefined = store === 'redis' ? await startRedisServer() : undefined;
  const origin = await startEchoOrigin();
  const input: ConfigInput = {
    ...CONFIG,
    ...(redis ? { redis: { url: redis.url, keyPrefix: `echo-${randomUUID()}:`, commandTimeoutMs: 5000 } } : {}),
  };
  const sidecar = await startSidecar({
    config: testConfig(origin.url, input),
    grpcPort: 0,
    adminPort: 0,
    host: '127.0.0.1',
    logger: silentLogger(),
  });
  await sidecar.schemaReady;
  if (redis) await storeAnswering(sidecar);
  const gateway = await startGateway({ processor: `127.0.0.1:${sidecar.grpcPort}`, origin: origin.url, port: 0 });
  return {
    target: { url: gateway.url, origin, sidecar },
    gateway,
    close: async () => {
      await gateway.close();
      await sidecar.close(1000);
      await origin.close();
      await redis?.stop();
    },
  };
}

/** The Redis store connects in the background and fails every call until it has. */
async function storeAnswering(sidecar: Sidecar): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await sidecar.store.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function summary(tally: Tally): string {
  const statuses = Object.entries(tally.statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status} ${count}`)
    .join(', ');
  return `${tally.runs} runs, ${tally.requests} requests (${statuses})`;
}

describe.each(VARIANTS)('every HIT is the echo origin\'s answer to that request, $store store', ({ store, runs }) => {
  let stack: Awaited<ReturnType<typeof startEchoStack>>;
  const tally: Tally = { runs: 0, requests: 0, statuses: {} };

  beforeAll(async () => {
    stack = await startEchoStack(store);
  });
  afterAll(async () => {
    await stack?.close();
    console.log(`echo property, ${store} store: ${summary(tally)}`);
  });

  it('holds for random requests, mutations and purges', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(runArbitrary, async (steps) => {
        tally.runs += 1;
        stack.target.origin.reset();
        await stack.target.sidecar.store.invalidateAll();
        await runSteps(stack.target, steps, tally);
      }),
      { numRuns: runs },
    );
  });
});
