import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ForcedResponse } from '../support/origin.js';
import { postGraphQL } from '../support/origin.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * A mutation whose answer svc-cache cannot read still invalidates, by the types its root fields
 * can return (docs/graphql-caching.md, Invalidation), through the gateway. The origin's forced
 * answer changes no data, so a MISS after it is the invalidation's doing alone.
 */

const TODO_1 = '{ todo(id: "1") { id title } }';
const USERS = '{ users { id name } }';
const UPDATE_TODO = 'mutation { updateTodo(id: "1", title: "Renamed") { id title } }';

const UNREADABLE: Array<[string, ForcedResponse]> = [
  [
    'an event stream',
    {
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: 'event: next\ndata: {"data":{"updateTodo":{"id":"1","title":"Renamed"}}}\n\nevent: complete\ndata:\n\n',
    },
  ],
  ['a multipart/mixed answer', { status: 200, headers: { 'content-type': 'multipart/mixed; boundary="-"' }, body: '---\r\n\r\n{}\r\n-----\r\n' }],
  ['a text/plain answer', { status: 200, headers: { 'content-type': 'text/plain' }, body: 'done' }],
  ['JSON that does not parse', { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":' }],
];

describe.each(['Entity', 'Type', 'None'] as const)('mutationPolicy %s: a mutation whose answer cannot be read', (policy) => {
  let stack: Stack;
  const invalidations: unknown[] = [];

  beforeAll(async () => {
    stack = await startStack({ mutationPolicy: policy });
  });
  afterAll(async () => {
    await stack.close();
  });
  beforeEach(async () => {
    stack.origin.reset();
    await stack.sidecar.store.invalidateAll();
    invalidations.length = 0;
  });

  async function statuses(queries: string[]): Promise<Array<string | undefined>> {
    const found: Array<string | undefined> = [];
    for (const query of queries) found.push((await postGraphQL(stack.url, { query })).headers['svc-cache']);
    return found;
  }

  it.each(UNREADABLE)('%s: invalidates every entry holding a type its root fields return, unless the policy is None', async (_name, answer) => {
    expect(await statuses([TODO_1, USERS])).toEqual(['MISS', 'MISS']);
    stack.origin.setBehaviour({ forcedResponse: answer });
    const mutation = await postGraphQL(stack.url, { query: UPDATE_TODO });
    expect([mutation.headers['svc-cache'], mutation.text]).toEqual(['PASS', answer.body]);
    stack.origin.setBehaviour({ forcedResponse: null });
    expect(await statuses([TODO_1, USERS])).toEqual([policy === 'None' ? 'HIT' : 'MISS', 'HIT']);
  });
});
