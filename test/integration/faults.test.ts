import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { demoSchemaSDL, startDemoOrigin, type DemoOrigin } from '../support/origin.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from '../support/redis.js';
import { freePort, startSidecarProcess, type SidecarProcess } from '../support/sidecarProcess.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * Faults around svc-cache (README, Faults): a broken origin, Redis dying under
 * load, the sidecar itself dying under load. Where the design promises pass-through no client
 * request fails, and no purge answered `true` is ever lost.
 */

const TODOS_BODY =
  '{"data":{"todos":[{"id":"1","title":"Buy milk"},{"id":"2","title":"Write the report"},{"id":"3","title":"Walk the dog"}]}}';
const USERS = '{ users { id name } }';
const USERS_BODY = '{"data":{"users":[{"id":"u1","name":"Alice"},{"id":"u2","name":"Bob"}]}}';
const PRODUCTS = '{ products { sku name price } }';
const PRODUCTS_BODY =
  '{"data":{"products":[{"sku":"sku-1","name":"Coffee beans","price":12.5},{"sku":"sku-2","name":"Green tea","price":4.25}]}}';
const TODO_1 = '{ todo(id: "1") { id title } }';

const PURGE_TOKEN = 'faults-purge-token-0123456789';
const PURGE_TODO_1 = 'mutation { purgeTodo(id: "1") }';
const PURGE_ACKNOWLEDGED = '{"data":{"purgeTodo":true}}';
const PURGE_NOT_APPLIED =
  '{"errors":[{"message":"The purge was not applied: the cache store did not confirm it. Retry the purge.","extensions":{"code":"PURGE_NOT_APPLIED"}}]}';

/** Bounds every client request, so that a hung exchange is a failure and never a hung test. */
const REQUEST_TIMEOUT_MS = 5000;

interface Answer {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  text: string;
}

async function send(url: string, query: string, headers: Record<string, string> = {}, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
}

function summary(answer: Answer): { status: number; contentType: string | undefined; svcCache: string | undefined; body: string } {
  return {
    status: answer.status,
    contentType: answer.headers['content-type'],
    svcCache: answer.headers['svc-cache'],
    body: answer.text,
  };
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Load {
  /** Requests answered so far, failed ones included. */
  answered(): number;
  /** What went wrong, one line per failed request; empty when every request got its right answer. */
  failures: string[];
  /** Lets the clients finish the request they are in and resolves when all have stopped. */
  stop(): Promise<void>;
}

/**
 * `clients` loops, each sending one request after another (`pauseMs` apart) until stopped, until
 * `maxRequests` are sent in all, or until `maxDurationMs` has passed. `exchange` sends one request
 * and throws when its answer is wrong.
 */
function startLoad(
  options: { clients: number; maxRequests: number; maxDurationMs: number; pauseMs: number },
  exchange: (sequence: number) => Promise<void>,
): Load {
  const failures: string[] = [];
  const deadline = Date.now() + options.maxDurationMs;
  let sent = 0;
  let answered = 0;
  let stopped = false;
  const client = async (): Promise<void> => {
    while (!stopped && sent < options.maxRequests && Date.now() < deadline) {
      const sequence = sent;
      sent += 1;
      try {
        await exchange(sequence);
      } catch (error) {
        failures.push(`request ${sequence}: ${error instanceof Error ? `${error.message}${causeOf(error)}` : String(error)}`);
      } finally {
        answered += 1;
      }
      if (options.pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  };
  const clients = Promise.all(Array.from({ length: options.clients }, client));
  return {
    answered: () => answered,
    failures,
    stop: async () => {
      stopped = true;
      await clients;
    },
  };
}

function causeOf(error: Error): string {
  return error.cause instanceof Error ? ` (${error.cause.message})` : '';
}

/** Fails with the answer in the message, so that a load's failure list says what came back. */
function expectAnswer(answer: Answer, status: number, body: string): void {
  if (answer.status !== status || answer.text !== body) {
    throw new Error(`expected ${status} ${body}, got ${answer.status} ${answer.text}`);
  }
}

describe('a broken origin', () => {
  let origin: DemoOrigin;
  let stack: Stack;
  const extraGateways: Gateway[] = [];
  const extraOrigins: Server[] = [];

  /** Another front door to the same sidecar, as a second Envoy route to another cluster would be. */
  async function gatewayTo(originUrl: string, routeTimeoutMs?: number): Promise<string> {
    const gateway = await startGateway({
      processor: `127.0.0.1:${stack.sidecar.grpcPort}`,
      origin: originUrl,
      port: 0,
      ...(routeTimeoutMs === undefined ? {} : { routeTimeoutMs }),
    });
    extraGateways.push(gateway);
    return `${gateway.url}/graphql`;
  }

  /** The answer is a 200 whose content-length promises more than is sent before the connection closes. */
  async function truncatingOrigin(): Promise<string> {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
      response.write('{"data":{"todos":[{"id":"1","title":"Buy', () => response.destroy());
    });
    extraOrigins.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  }

  /** The sidecar was left working: the query it never stored is a MISS through a healthy origin, then a HIT. */
  async function expectCachedNormallyAfterwards(query: string): Promise<void> {
    origin.reset();
    const answers = [await send(stack.url, query), await send(stack.url, query)];
    expect(answers.map(summary)).toEqual([
      { status: 200, contentType: 'application/json; charset=utf-8', svcCache: 'MISS', body: TODOS_BODY },
      { status: 200, contentType: 'application/json; charset=utf-8', svcCache: 'HIT', body: TODOS_BODY },
    ]);
  }

  beforeAll(async () => {
    origin = await startDemoOrigin({ port: 0 });
    stack = await startStack({}, { origin });
  });
  afterAll(async () => {
    await Promise.all(extraGateways.map((gateway) => gateway.close()));
    await Promise.all(
      extraOrigins.map((server) => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(resolve));
      }),
    );
    await stack?.close();
    await origin?.close();
  });
  beforeEach(() => {
    origin.reset();
  });

  it('that refuses connections: the client gets the router\'s 503, twice, and nothing is cached', async () => {
    const query = 'query OriginDown { todos { id title } }';
    const url = await gatewayTo(`http://127.0.0.1:${await freePort()}/graphql`);
    const answers = [await send(url, query), await send(url, query)];
    // Envoy 1.36 does not show its own replies to ext_proc (docs/ext-proc.md, Local replies): no svc-cache header.
    const refused = {
      status: 503,
      contentType: 'text/plain',
      svcCache: undefined,
      body: 'upstream connect error or disconnect/reset before headers. reset reason: remote connection failure, transport failure reason: delayed connect error: Connection refused',
    };
    expect(answers.map(summary)).toEqual([refused, refused]);
    await expectCachedNormallyAfterwards(query);
  });

  it('slower than the route timeout: the client gets the router\'s 504, twice, and nothing is cached', async () => {
    const query = 'query OriginSlow { todos { id title } }';
    const url = await gatewayTo(origin.url, 250);
    origin.setBehaviour({ delayMs: 700 });
    const answers = [await send(url, query), await send(url, query)];
    const timedOut = { status: 504, contentType: 'text/plain', svcCache: undefined, body: 'upstream request timeout' };
    expect(answers.map(summary)).toEqual([timedOut, timedOut]);
    await expectCachedNormallyAfterwards(query);
  });

  it.each([
    {
      fault: 'a 500',
      operation: 'Origin500',
      response: { status: 500, headers: { 'content-type': 'application/json' }, body: '{"errors":[{"message":"Internal failure"}]}' },
    },
    {
      fault: 'a 200 whose JSON-typed body is not JSON',
      operation: 'OriginNotJson',
      response: { status: 200, headers: { 'content-type': 'application/json' }, body: '<html><body>Service unavailable</body></html>' },
    },
    {
      fault: 'a 200 GraphQL result under a content type that is not JSON',
      operation: 'OriginWrongType',
      response: { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: TODOS_BODY },
    },
    {
      fault: 'a 200 whose JSON is cut short (its content-length matches)',
      operation: 'OriginCutJson',
      response: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"todos":[{"id":"1","title":"Buy' },
    },
  ])('that answers $fault: the client gets exactly that, twice, and nothing is cached', async ({ operation, response }) => {
    const query = `query ${operation} { todos { id title } }`;
    origin.setBehaviour({ forcedResponse: response });
    const answers = [await send(stack.url, query), await send(stack.url, query)];
    const passed = { status: response.status, contentType: response.headers['content-type'], svcCache: 'PASS', body: response.body };
    expect(answers.map(summary)).toEqual([passed, passed]);
    await expectCachedNormallyAfterwards(query);
  });

  it('that closes the connection in the middle of a 200 body: the client is reset, twice, and nothing is cached', async () => {
    const query = 'query OriginTruncated { todos { id title } }';
    const url = await gatewayTo(await truncatingOrigin());
    for (const attempt of [1, 2]) {
      await expect(send(url, query), `attempt ${attempt}`).rejects.toThrow('fetch failed');
    }
    await expectCachedNormallyAfterwards(query);
  });
});

describe('Redis killed and restarted under load', () => {
  let redis: RedisServer;
  let origin: DemoOrigin;
  let stack: Stack;

  const purge = (): Promise<Answer> => send(stack.url, PURGE_TODO_1, { 'svc-purge-token': PURGE_TOKEN });
  const renameTodo1AtTheOrigin = async (title: string): Promise<void> => {
    const answer = await send(origin.url, `mutation { updateTodo(id: "1", title: "${title}") { id } }`);
    expectAnswer(answer, 200, '{"data":{"updateTodo":{"id":"1"}}}');
  };
  const todo1Body = (title: string): string => `{"data":{"todo":{"id":"1","title":"${title}"}}}`;

  beforeAll(async () => {
    redis = await startRedisServer();
    origin = await startDemoOrigin({ port: 0 });
    stack = await startStack(
      {
        redis: { url: redis.url, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS },
        purge: { tokens: [PURGE_TOKEN] },
      },
      { origin },
    );
  });
  afterAll(async () => {
    await stack?.close();
    await origin?.close();
    await redis?.stop();
  });
  beforeEach(() => {
    origin.reset();
  });

  it('answers every request with the origin\'s data, refuses purges while down and loses no acknowledged purge', async () => {
    type Phase = 'before' | 'killing' | 'down' | 'restarting' | 'after';
    let phase: Phase = 'before';
    /** Todo 1 is titled `Version N`; once the purge after version N was acknowledged, no older title may be served. */
    let acknowledgedVersion = 0;
    const versionOf = (title: string): number => (title === 'Buy milk' ? 0 : Number(/^Version (\d+)$/.exec(title)?.[1] ?? NaN));
    const cacheStatusesByPhase: Record<Phase, string[]> = { before: [], killing: [], down: [], restarting: [], after: [] };

    const load = startLoad({ clients: 4, maxRequests: 600, maxDurationMs: 12_000, pauseMs: 0 }, async (sequence) => {
      const query = [USERS, PRODUCTS, TODO_1][sequence % 3]!;
      const sentIn = phase;
      const oldestAllowed = acknowledgedVersion;
      const answer = await send(stack.url, query);
      if (phase === sentIn) cacheStatusesByPhase[sentIn].push(answer.headers['svc-cache'] ?? 'none');
      if (query === USERS) return expectAnswer(answer, 200, USERS_BODY);
      if (query === PRODUCTS) return expectAnswer(answer, 200, PRODUCTS_BODY);
      const title = (JSON.parse(answer.text) as { data?: { todo?: { title?: string } } }).data?.todo?.title ?? '';
      expectAnswer(answer, 200, todo1Body(title));
      if (!(versionOf(title) >= oldestAllowed)) {
        throw new Error(`served "${title}" (${answer.headers['svc-cache']}) after the purge of version ${oldestAllowed} was acknowledged`);
      }
    });

    interface PurgeRecord {
      version: number;
      sentIn: Phase;
      answeredIn: Phase;
      outcome: 'acknowledged' | 'not applied';
    }
    const purges: PurgeRecord[] = [];
    const purgeFailures: string[] = [];
    let purging = true;
    const purger = (async (): Promise<void> => {
      for (let version = 1; purging && version <= 200; version += 1) {
        const sentIn = phase;
        await renameTodo1AtTheOrigin(`Version ${version}`);
        const answer = await purge();
        const answeredIn = phase;
        if (answer.status === 200 && answer.text === PURGE_ACKNOWLEDGED) {
          acknowledgedVersion = version;
          purges.push({ version, sentIn, answeredIn, outcome: 'acknowledged' });
          const next = await send(stack.url, TODO_1);
          if (next.text !== todo1Body(`Version ${version}`)) {
            purgeFailures.push(`after the acknowledged purge of version ${version}: ${next.headers['svc-cache']} ${next.text}`);
          }
        } else if (answer.status === 503 && answer.text === PURGE_NOT_APPLIED) {
          purges.push({ version, sentIn, answeredIn, outcome: 'not applied' });
          // As a purge job would, before it tries again: refused at once, it would spend its versions.
          await new Promise((resolve) => setTimeout(resolve, 100));
        } else {
          purgeFailures.push(`purge of version ${version}: ${answer.status} ${answer.text}`);
        }
      }
    })().catch((error: unknown) => {
      purgeFailures.push(`the purging client stopped: ${String(error)}`);
    });
    const purgesIn = (from: Phase, to: Phase = from) => purges.filter((p) => p.sentIn === from && p.answeredIn === to);
    /** A purging client that went wrong ends the wait at once; the assertions below then say how. */
    const untilPhaseDone = (what: string, condition: () => boolean, timeoutMs?: number) =>
      waitFor(what, () => purgeFailures.length > 0 || condition(), timeoutMs);

    try {
      await untilPhaseDone('load before the outage', () => load.answered() >= 90 && purgesIn('before').length >= 3);
      phase = 'killing';
      await redis.kill();
      phase = 'down';
      expectAnswer(await purge(), 503, PURGE_NOT_APPLIED);
      const answeredAtKill = load.answered();
      await untilPhaseDone('load during the outage', () => load.answered() >= answeredAtKill + 90 && purgesIn('down').length >= 3);
      phase = 'restarting';
      await redis.restart();
      await waitFor('the store to reconnect', () => stack.sidecar.store.ping().then(() => true, () => false));
      phase = 'after';
      const answeredAtRestart = load.answered();
      // Purges are refused until the registry of replicas begun again is older than one
      // registration (README, The replica-local cache): a replica paused across the restart may serve.
      const acknowledgedAfter = () => purgesIn('after').filter((p) => p.outcome === 'acknowledged').length;
      await untilPhaseDone('load after the restart', () => load.answered() >= answeredAtRestart + 90 && acknowledgedAfter() >= 3, 15_000);
    } finally {
      purging = false;
      await purger;
      await load.stop();
    }

    expect(load.failures).toEqual([]);
    expect(purgeFailures).toEqual([]);
    expect(purgesIn('before').map((p) => p.outcome)).toEqual(purgesIn('before').map(() => 'acknowledged'));
    expect(purgesIn('down').map((p) => p.outcome)).toEqual(purgesIn('down').map(() => 'not applied'));
    const after = purgesIn('after').map((p) => p.outcome);
    expect(after.slice(after.indexOf('acknowledged'))).toEqual(after.slice(after.indexOf('acknowledged')).map(() => 'acknowledged'));
    expect(cacheStatusesByPhase.before).toContain('HIT');
    expect(new Set(cacheStatusesByPhase.down)).toEqual(new Set(['PASS']));
    expect(cacheStatusesByPhase.after).toContain('HIT');

    const query = 'query AfterTheRestart { users { id name } }';
    const afterRestart = [await send(stack.url, query), await send(stack.url, query)];
    expect(afterRestart.map((answer) => [answer.status, answer.headers['svc-cache'], answer.text])).toEqual([
      [200, 'MISS', USERS_BODY],
      [200, 'HIT', USERS_BODY],
    ]);
  });

  it('never stores an answer fetched before a restart over a purge acknowledged after it', async () => {
    const query = '{ todo(id: "1") { __typename id title } }';
    const oldBody = '{"data":{"todo":{"__typename":"Todo","id":"1","title":"Buy milk"}}}';
    const newBody = '{"data":{"todo":{"__typename":"Todo","id":"1","title":"Renamed after the restart"}}}';
    // Any purge raises the invalidation sequence, which a Redis restart sets back to nothing; the
    // answer fetched below carries the raised sequence in its mark.
    expectAnswer(await purge(), 200, PURGE_ACKNOWLEDGED);

    // The origin computes this answer now and delivers it after the restart and the purge below,
    // which is refused until the registry of replicas begun again is older than one registration.
    origin.setBehaviour({ delayMs: 8000, forcedResponse: { status: 200, headers: { 'content-type': 'application/json' }, body: oldBody } });
    let slowAnswerArrived = false;
    const fetchedBeforeTheRestart = send(stack.url, query, {}, 15_000).finally(() => (slowAnswerArrived = true));
    await waitFor('the origin to receive the query', () => origin.requestCount() === 1);
    origin.setBehaviour({ delayMs: 0, forcedResponse: null });

    await redis.restart();
    await waitFor('the store to reconnect', () => stack.sidecar.store.ping().then(() => true, () => false));
    await renameTodo1AtTheOrigin('Renamed after the restart');
    await waitFor(
      'a purge to be acknowledged',
      async () => {
      const answer = await purge();
      if (answer.status === 503) return false;
      expectAnswer(answer, 200, PURGE_ACKNOWLEDGED);
      return true;
      },
      10_000,
    );
    expect(slowAnswerArrived, 'the slow answer must still be on its way for this test to mean anything').toBe(false);

    const answers = [await fetchedBeforeTheRestart, await send(stack.url, query)];
    expect(answers.map(summary)).toEqual([
      { status: 200, contentType: 'application/json', svcCache: 'PASS', body: oldBody },
      { status: 200, contentType: 'application/json; charset=utf-8', svcCache: 'MISS', body: newBody },
    ]);
  });
});

describe('the sidecar killed under load (Envoy fails open)', () => {
  let directory: string;
  let origin: DemoOrigin;
  let gateway: Gateway | undefined;
  const sidecars: SidecarProcess[] = [];

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'svc-cache-faults-'));
    origin = await startDemoOrigin({ port: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.all(sidecars.map((sidecar) => sidecar.kill()));
    await origin?.close();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('answers every request with the origin\'s answer while it is gone, and caches again once one is back', async () => {
    const schemaFile = join(directory, 'schema.graphql');
    const configPath = join(directory, 'config.yaml');
    await writeFile(schemaFile, demoSchemaSDL);
    await writeFile(
      configPath,
      [
        'origin:',
        `  url: ${origin.url}`,
        'schema:',
        `  file: ${schemaFile}`,
        'rules:',
        '  - types: [Query]',
        '    maxAge: 60',
        'logging:',
        '  level: error',
        '',
      ].join('\n'),
    );
    const ports = { configPath, grpcPort: await freePort(), adminPort: await freePort() };
    const first = await startSidecarProcess(ports);
    sidecars.push(first);
    const front = await startGateway({ processor: `127.0.0.1:${ports.grpcPort}`, origin: origin.url, port: 0 });
    gateway = front;
    const url = `${front.url}/graphql`;

    type Phase = 'alive' | 'killed' | 'restarting' | 'replaced';
    let phase: Phase = 'alive';
    const cacheStatusesByPhase: Record<Phase, string[]> = { alive: [], killed: [], restarting: [], replaced: [] };
    let newSidecarAnswered = false;
    // Paced, so that the seconds a new sidecar process takes to start do not use up the requests.
    const load = startLoad({ clients: 4, maxRequests: 1000, maxDurationMs: 15_000, pauseMs: 10 }, async (sequence) => {
      const [query, body] = sequence % 2 === 0 ? [USERS, USERS_BODY] : [PRODUCTS, PRODUCTS_BODY];
      const sentIn = phase;
      const answer = await send(url, query);
      if (phase === sentIn) cacheStatusesByPhase[sentIn].push(answer.headers['svc-cache'] ?? 'none');
      if (sentIn === 'restarting' && answer.headers['svc-cache'] !== undefined) newSidecarAnswered = true;
      expectAnswer(answer, 200, body);
    });

    try {
      await waitFor('load through the sidecar', () => load.answered() >= 60);
      await first.kill();
      phase = 'killed';
      const answeredAtKill = load.answered();
      await waitFor('load without a sidecar', () => load.answered() >= answeredAtKill + 60);
      phase = 'restarting';
      sidecars.push(await startSidecarProcess(ports));
      await waitFor('the gateway to reach the new sidecar', () => newSidecarAnswered);
      phase = 'replaced';
      const answeredAtRestart = load.answered();
      await waitFor('load through the new sidecar', () => load.answered() >= answeredAtRestart + 60);
    } finally {
      await load.stop();
    }

    expect(load.failures).toEqual([]);
    expect(cacheStatusesByPhase.alive).toContain('HIT');
    expect(new Set(cacheStatusesByPhase.killed)).toEqual(new Set(['none']));
    expect(cacheStatusesByPhase.replaced).toContain('HIT');

    const query = 'query AfterTheNewSidecar { todos { id title } }';
    const afterRestart = [await send(url, query), await send(url, query)];
    expect(afterRestart.map((answer) => [answer.status, answer.headers['svc-cache'], answer.text])).toEqual([
      [200, 'MISS', TODOS_BODY],
      [200, 'HIT', TODOS_BODY],
    ]);
  });
});

/**
 * A mutation Envoy answers itself (its route timeout's 504) while the origin runs it on: a stack of
 * its own, since the invalidations repeated 1, 5 and 30 s later would land in other tests.
 */
describe('a mutation slower than the route timeout', () => {
  let origin: DemoOrigin;
  let stack: Stack;
  let gateway: Gateway | undefined;

  /** A front door to the same sidecar whose route gives the origin 250 ms. */
  async function slowRoute(): Promise<string> {
    gateway ??= await startGateway({ processor: `127.0.0.1:${stack.sidecar.grpcPort}`, origin: origin.url, port: 0, routeTimeoutMs: 250 });
    return `${gateway.url}/graphql`;
  }

  beforeAll(async () => {
    origin = await startDemoOrigin({ port: 0 });
    stack = await startStack({}, { origin });
  });
  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
    await origin?.close();
  });

  // The ext_proc audit: Envoy's own 504 skips ext_proc (docs/ext-proc.md, Local replies), so a
  // mutation the origin ran on after it invalidated nothing, and the list was served stale.
  it("a mutation slower than the route timeout: the origin runs it after Envoy's 504, and its type's entries are gone", async () => {
    const list = 'query TitlesBeforeLateRename { todos { id title } }';
    expect([(await send(stack.url, list)).headers['svc-cache'], (await send(stack.url, list)).headers['svc-cache']]).toEqual(['MISS', 'HIT']);
    const url = await slowRoute();
    origin.setBehaviour({ delayMs: 700 });
    const mutation = await send(url, 'mutation { updateTodo(id: "1", title: "Renamed late") { id } }');
    expect(summary(mutation)).toEqual({ status: 504, contentType: 'text/plain', svcCache: undefined, body: 'upstream request timeout' });
    origin.setBehaviour({ delayMs: 0 });
    await vi.waitFor(async () => expect((await send(origin.url, '{ todo(id: "1") { title } }')).text).toContain('Renamed late'), { timeout: 3000, interval: 100 });
    const after = await send(stack.url, list);
    expect([after.headers['svc-cache'], after.text.includes('Renamed late')]).toEqual(['MISS', true]);
  });

  // The review of that fix: a read between Envoy's 504 and the origin's commit stored the list from
  // before the mutation, and it was served stale for its maxAge.
  it('invalidates the types again later, so a read made before the origin finished is not kept', async () => {
    const list = 'query TitlesBeforeLaterRename { todos { id title } }';
    await send(stack.url, list);
    const url = await slowRoute();
    origin.setBehaviour({ delayMs: 700 });
    expect((await send(url, 'mutation { updateTodo(id: "2", title: "Renamed later") { id } }')).status).toBe(504);
    origin.setBehaviour({ delayMs: 0 });
    const meanwhile = await send(stack.url, list);
    expect([meanwhile.headers['svc-cache'], meanwhile.text.includes('Renamed later')]).toEqual(['MISS', false]);
    await vi.waitFor(async () => expect((await send(stack.url, list)).text).toContain('Renamed later'), { timeout: 4000, interval: 200 });
  });

});
