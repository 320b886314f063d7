import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { getGraphQL, persistedQueryExtensions, postGraphQL, startDemoOrigin, type DemoOrigin } from '../support/origin.js';
import { startStack, type ConfigInput, type Stack } from '../support/stack.js';

/**
 * Batches (a JSON array of operations, as Apollo's BatchHttpLink sends) through the gateway: never
 * stored, and their mutations invalidate from the array of answers (docs/graphql-caching.md,
 * Invalidation). The demo origin takes one operation per request, so a small batching origin in
 * front of it runs each element in turn and answers the array.
 */

const TODO_1 = '{ todo(id: "1") { id title } }';
const RENAME = 'mutation { updateTodo(id: "1", title: "Renamed") { id title } }';

describe.each(['Entity', 'Type'] as const)('batches, mutationPolicy %s', (policy) => {
  const running = useBatchingStack({ mutationPolicy: policy });
  beforeEach(async () => {
    running.demo.reset();
    await running.stack.sidecar.store.invalidateAll();
  });

  const batch = (operations: Array<{ query: string }>) => postGraphQL(running.stack.url, JSON.stringify(operations));

  it('a batch holding a mutation then a query invalidates: the next single query is a MISS with fresh data', async () => {
    expect((await postGraphQL(running.stack.url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    expect((await postGraphQL(running.stack.url, { query: TODO_1 })).headers['svc-cache']).toBe('HIT');
    const answered = await batch([{ query: RENAME }, { query: TODO_1 }]);
    expect([answered.headers['svc-cache'], answered.text]).toEqual([
      'PASS',
      '[{"data":{"updateTodo":{"id":"1","title":"Renamed"}}},{"data":{"todo":{"id":"1","title":"Renamed"}}}]',
    ]);
    const after = await postGraphQL(running.stack.url, { query: TODO_1 });
    expect([after.headers['svc-cache'], after.text]).toEqual(['MISS', '{"data":{"todo":{"id":"1","title":"Renamed"}}}']);
  });

  it('never stores a batch of queries', async () => {
    const first = await batch([{ query: TODO_1 }, { query: '{ users { id } }' }]);
    const second = await batch([{ query: TODO_1 }, { query: '{ users { id } }' }]);
    expect([first.headers['svc-cache'], second.headers['svc-cache'], second.text]).toEqual(['PASS', 'PASS', first.text]);
    expect(running.demo.requestCount()).toBe(4);
  });

  it('answers a batch holding a hash svc-cache does not know with PersistedQueryNotFound for each operation, never forwarded', async () => {
    // The origin may know the hash: svc-cache could not see the mutation it would run.
    const hashOnly = { extensions: persistedQueryExtensions(RENAME) };
    const refused = await postGraphQL(running.stack.url, JSON.stringify([{ query: TODO_1 }, hashOnly]));
    const notFound = '{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}';
    expect([refused.status, refused.text]).toEqual([200, `[${notFound},${notFound}]`]);
    expect(running.demo.requestCount()).toBe(0);
    // Sent again with its text, as Apollo's persisted-query link does, the mutation invalidates.
    expect((await postGraphQL(running.stack.url, { query: TODO_1 })).headers['svc-cache']).toBe('MISS');
    await postGraphQL(running.stack.url, JSON.stringify([{ query: RENAME, ...hashOnly }]));
    expect((await postGraphQL(running.stack.url, { query: TODO_1 })).text).toBe('{"data":{"todo":{"id":"1","title":"Renamed"}}}');
  });

  // The clients audit: Apollo's persisted-query link over BatchHttpLink sends a batch's operations as
  // hashes alone once they were sent with their text. svc-cache registered no hash a batch sent and
  // forwarded a hash it knew unexpanded: an origin without APQ answered "Must provide query string".
  it('registers the hashes a batch sends with their text, and expands a batch of hashes alone for the origin', async () => {
    const withText = { query: TODO_1, extensions: persistedQueryExtensions(TODO_1) };
    const registered = await postGraphQL(running.stack.url, JSON.stringify([withText]));
    expect(registered.text).toBe('[{"data":{"todo":{"id":"1","title":"Buy milk"}}}]');
    const hashOnly = { extensions: persistedQueryExtensions(TODO_1) };
    const answered = await postGraphQL(running.stack.url, JSON.stringify([hashOnly, { query: '{ users { id } }' }]));
    expect([answered.status, answered.headers['svc-cache'], answered.text]).toEqual([200, 'PASS', '[{"data":{"todo":{"id":"1","title":"Buy milk"}}},{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}]']);
    const forwarded = running.demo.requests.slice(-2).map((request) => JSON.parse(request.body) as unknown);
    expect(forwarded).toEqual([{ query: TODO_1 }, { query: '{ users { id } }' }]);
  });

  it('refuses a batch one of whose operations is over the limits, never forwarded', async () => {
    const deep = `{ ${'todos { author { '.repeat(13)}id${' } }'.repeat(13)} }`;
    const refused = await batch([{ query: RENAME }, { query: deep }]);
    expect(refused.status).toBe(400);
    expect(running.demo.requestCount()).toBe(0);
  });
});

describe('a batch of persisted queries expanded past the body limit', () => {
  const running = useBatchingStack({ limits: { maxRequestBodyBytes: 4096 } });

  const TOO_LARGE = {
    errors: [{ message: 'Request body is larger than 4096 bytes with the persisted queries it names expanded', extensions: { code: 'PAYLOAD_TOO_LARGE' } }],
  };

  it('is refused with 413 and never forwarded, by the texts the hashes name or by the body they make', async () => {
    // Each reference is some 100 bytes of the request and names a text of 1,500: two fit, three do not.
    const long = `${TODO_1} #${'x'.repeat(1500)}`;
    expect((await postGraphQL(running.stack.url, { query: long, extensions: persistedQueryExtensions(long) })).status).toBe(200);
    const hashOnly = { extensions: persistedQueryExtensions(long) };
    running.demo.reset();
    const fits = await postGraphQL(running.stack.url, JSON.stringify([hashOnly, hashOnly]));
    expect([fits.status, running.demo.requestCount()]).toEqual([200, 2]);
    running.demo.reset();
    const over = await postGraphQL(running.stack.url, JSON.stringify([hashOnly, hashOnly, hashOnly]));
    expect([over.status, over.json, running.demo.requestCount()]).toEqual([413, TOO_LARGE, 0]);
    // A text's control characters take six bytes each in the JSON the origin would get; registered
    // over GET, whose URL escapes them in three.
    const controls = `${TODO_1} #${'\u0001'.repeat(800)}`;
    const registered = await getGraphQL(running.stack.url, { query: controls, extensions: persistedQueryExtensions(controls) });
    expect(registered.status).toBe(200);
    running.demo.reset();
    const escaped = await postGraphQL(running.stack.url, JSON.stringify([{ extensions: persistedQueryExtensions(controls) }]));
    expect([escaped.status, escaped.json, running.demo.requestCount()]).toEqual([413, TOO_LARGE, 0]);
  });
});

/**
 * For the describe block: the demo origin, which takes one operation per request, behind a batching
 * origin, behind the gateway and a sidecar configured with `config`.
 */
function useBatchingStack(config: ConfigInput): { readonly demo: DemoOrigin; readonly stack: Stack } {
  let demo: DemoOrigin | undefined;
  let batching: Server | undefined;
  let stack: Stack | undefined;
  beforeAll(async () => {
    demo = await startDemoOrigin({ port: 0 });
    batching = await startBatchingOrigin(demo.url);
    stack = await startStack(config, { origin: { ...demo, url: `http://127.0.0.1:${(batching.address() as AddressInfo).port}/graphql` } });
  });
  afterAll(async () => {
    await stack?.close();
    await new Promise((resolve) => batching?.close(resolve));
    await demo?.close();
  });
  return {
    get demo() {
      if (!demo) throw new Error('the batching stack starts before the tests');
      return demo;
    },
    get stack() {
      if (!stack) throw new Error('the batching stack starts before the tests');
      return stack;
    },
  };
}

/** Answers a JSON array body by sending each element to `originUrl` in turn; anything else is proxied as is. */
async function startBatchingOrigin(originUrl: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = { 'content-type': 'application/json', accept: 'application/json' };
        if (req.method === 'POST' && body.trimStart().startsWith('[')) {
          const answers: string[] = [];
          for (const element of JSON.parse(body) as unknown[]) {
            answers.push(await (await fetch(originUrl, { method: 'POST', headers, body: JSON.stringify(element) })).text());
          }
          res.writeHead(200, { 'content-type': 'application/json' }).end(`[${answers.join(',')}]`);
          return;
        }
        const answer = await fetch(`${new URL(originUrl).origin}${req.url}`, { method: req.method, headers, ...(req.method === 'POST' ? { body } : {}) });
        res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(Buffer.from(await answer.arrayBuffer()));
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
