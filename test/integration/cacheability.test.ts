import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { postGraphQL, type GraphQLHttpResult } from '../support/origin.js';
import { startStack, type ConfigInput, type Stack, useStack } from '../support/stack.js';

/**
 * What the origin's answer and the configuration allow to be stored, end to end through the gateway
 * and real ext_proc gRPC: every answer that is not stored reaches the client exactly as the origin
 * sent it, marked PASS.
 */

const TIME = '{ time }';
const TODO = '{ todo(id: "1") { id } }';
const TODO_BODY = '{"data":{"todo":{"id":"1"}}}';
/** Just past maxAge 1 (and origin max-age=1): the entry is expired, the wait stays short. */
const PAST_ONE_SECOND_MS = 1100;

function statuses(results: readonly GraphQLHttpResult<unknown>[]): Array<string | undefined> {
  return results.map((result) => result.headers['svc-cache']);
}

async function twice(stack: Stack, query: string): Promise<[GraphQLHttpResult<unknown>, GraphQLHttpResult<unknown>]> {
  return [await postGraphQL(stack.url, { query }), await postGraphQL(stack.url, { query })];
}

async function startFreshStack(input: ConfigInput, origin?: Stack['origin']): Promise<Stack> {
  const stack = await startStack(input, origin ? { origin } : {});
  stack.origin.reset();
  return stack;
}

describe('answers the origin makes uncacheable', () => {
  const stack = useStack();

  it('passes a 200 answer with GraphQL errors, with or without data, as the origin sent it', async () => {
    for (const body of [
      '{"errors":[{"message":"backend down"}]}',
      '{"data":{"todo":null},"errors":[{"message":"not allowed","path":["todo"]}]}',
    ]) {
      stack().origin.setBehaviour({
        forcedResponse: { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body },
      });
      const results = await twice(stack(), TODO);
      expect(statuses(results), body).toEqual(['PASS', 'PASS']);
      expect(results.map((result) => [result.status, result.text]), body).toEqual([
        [200, body],
        [200, body],
      ]);
    }
    expect(stack().origin.requestCount()).toBe(4);
  });

  it('passes a non-200 answer as the origin sent it', async () => {
    const body = '{"errors":[{"message":"overloaded"}]}';
    stack().origin.setBehaviour({
      forcedResponse: { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '5' }, body },
    });
    const results = await twice(stack(), TODO);
    expect(statuses(results)).toEqual(['PASS', 'PASS']);
    expect(results.map((result) => [result.status, result.headers['retry-after'], result.text])).toEqual([
      [503, '5', body],
      [503, '5', body],
    ]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('passes an answer that sets a cookie, and the client still gets the cookie', async () => {
    stack().origin.setBehaviour({ headers: { 'set-cookie': 'sid=abc; Path=/; HttpOnly' } });
    const results = await twice(stack(), TODO);
    expect(statuses(results)).toEqual(['PASS', 'PASS']);
    expect(results.map((result) => [result.text, result.headers['set-cookie']])).toEqual([
      [TODO_BODY, 'sid=abc; Path=/; HttpOnly'],
      [TODO_BODY, 'sid=abc; Path=/; HttpOnly'],
    ]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('passes answers marked cache-control no-store or private', async () => {
    for (const cacheControl of ['no-store', 'private, max-age=60', 'max-age=60, No-Store']) {
      stack().origin.setBehaviour({ headers: { 'cache-control': cacheControl } });
      const results = await twice(stack(), TODO);
      expect(statuses(results), cacheControl).toEqual(['PASS', 'PASS']);
      expect(results.map((result) => [result.text, result.headers['cache-control']]), cacheControl).toEqual([
        [TODO_BODY, cacheControl],
        [TODO_BODY, cacheControl],
      ]);
    }
    expect(stack().origin.requestCount()).toBe(6);
  });

  it('passes an answer marked cache-control no-cache: svc-cache does not revalidate, so it must not reuse it', async () => {
    // RFC 9111 section 5.2.2.4: a no-cache response is not used for another request without validation.
    stack().origin.setBehaviour({ headers: { 'cache-control': 'no-cache' } });
    const results = await twice(stack(), TIME);
    expect(statuses(results)).toEqual(['PASS', 'PASS']);
    expect(results[1]?.text).not.toBe(results[0]?.text);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('passes an answer whose max-age is 0', async () => {
    stack().origin.setBehaviour({ headers: { 'cache-control': 'max-age=0' } });
    const results = await twice(stack(), TODO);
    expect(statuses(results)).toEqual(['PASS', 'PASS']);
    expect(results.map((result) => result.text)).toEqual([TODO_BODY, TODO_BODY]);
  });

  it('replays the origin cache-control on PUBLIC answers, with age on the HIT and no vary added', async () => {
    stack().origin.setBehaviour({ headers: { 'cache-control': 'public, max-age=60' } });
    const [miss, hit] = await twice(stack(), TODO);
    expect(statuses([miss, hit])).toEqual(['MISS', 'HIT']);
    expect([miss.headers['cache-control'], hit.headers['cache-control']]).toEqual(['public, max-age=60', 'public, max-age=60']);
    expect([miss.headers['vary'], hit.headers['vary']]).toEqual([undefined, undefined]);
    expect([miss.headers['age'], hit.headers['age']]).toEqual([undefined, '0']);
    expect(hit.text).toBe(TODO_BODY);
  });
});

describe('rules, lifetimes and limits', () => {
  it('passes a query that matches no rule, and matches rules on the fields a query selects', async () => {
    const stack = await startFreshStack({
      rules: [{ description: 'e-mail addresses', types: { User: ['email'] }, maxAge: 60 }],
    });
    try {
      const withoutEmail = await twice(stack, '{ users { id name } }');
      const withEmail = await twice(stack, '{ users { id email } }');
      const todos = await twice(stack, '{ todos { id } }');
      expect(statuses([...withoutEmail, ...withEmail, ...todos])).toEqual(['PASS', 'PASS', 'MISS', 'HIT', 'PASS', 'PASS']);
      const users = (field: 'name' | 'email', alice: string, bob: string): string =>
        JSON.stringify({ data: { users: [{ id: 'u1', [field]: alice }, { id: 'u2', [field]: bob }] } });
      expect(withoutEmail.map((result) => result.text)).toEqual(Array<string>(2).fill(users('name', 'Alice', 'Bob')));
      expect(withEmail.map((result) => result.text)).toEqual(
        Array<string>(2).fill(users('email', 'alice@example.com', 'bob@example.com')),
      );
      expect(todos.map((result) => result.text)).toEqual(
        Array<string>(2).fill('{"data":{"todos":[{"id":"1"},{"id":"2"},{"id":"3"}]}}'),
      );
      expect(stack.origin.requestCount()).toBe(5);
    } finally {
      await stack.close();
    }
  });

  it('expires an entry after the rule maxAge: HIT within it, MISS with a fresh answer after it', async () => {
    const stack = await startFreshStack({ rules: [{ types: ['Query'], maxAge: 1 }] });
    try {
      const [first, second] = await twice(stack, TIME);
      await sleep(PAST_ONE_SECOND_MS);
      const afterExpiry = await postGraphQL(stack.url, { query: TIME });
      const afterExpiryAgain = await postGraphQL(stack.url, { query: TIME });
      expect(statuses([first, second, afterExpiry, afterExpiryAgain])).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
      expect(second.text).toBe(first.text);
      expect(afterExpiry.text).not.toBe(first.text);
      expect(afterExpiryAgain.text).toBe(afterExpiry.text);
      expect(stack.origin.requestCount()).toBe(2);
    } finally {
      await stack.close();
    }
  });

  it('shortens the lifetime to a shorter origin max-age or s-maxage unless cache.ignoreOriginCacheControl is set', async () => {
    const rules = [{ types: ['Query'], maxAge: 60 }];
    const obeying = await startFreshStack({ rules });
    const ignoring = await startFreshStack({ rules, cache: { ignoreOriginCacheControl: true } }, obeying.origin);
    try {
      obeying.origin.setBehaviour({ headers: { 'cache-control': 'public, max-age=1' } });
      const sharedMaxAge = '{ sharedMaxAge: time }';
      const stored = [...(await twice(obeying, TIME)), ...(await twice(ignoring, TIME))];
      obeying.origin.setBehaviour({ headers: { 'cache-control': 's-maxage=1, max-age=60' } });
      stored.push(...(await twice(obeying, sharedMaxAge)));
      expect(statuses(stored)).toEqual(['MISS', 'HIT', 'MISS', 'HIT', 'MISS', 'HIT']);

      await sleep(PAST_ONE_SECOND_MS);
      const obeyed = await postGraphQL(obeying.url, { query: TIME });
      const ignored = await postGraphQL(ignoring.url, { query: TIME });
      const obeyedShared = await postGraphQL(obeying.url, { query: sharedMaxAge });
      expect(statuses([obeyed, ignored, obeyedShared])).toEqual(['MISS', 'HIT', 'MISS']);
      expect(obeyed.text).not.toBe(stored[0]?.text);
      expect(ignored.text).toBe(stored[2]?.text);
      expect(ignored.headers['age']).toBe('1');
      expect(ignored.headers['cache-control']).toBe('public, max-age=1');
      expect(obeyedShared.text).not.toBe(stored[4]?.text);
    } finally {
      await ignoring.close();
      await obeying.close();
    }
  });

  it('stores a response of exactly limits.maxResponseBodyBytes and passes a larger one uncached', async () => {
    const size = Buffer.byteLength(TODO_BODY);
    const atLimit = await startFreshStack({ limits: { maxResponseBodyBytes: size } });
    const belowLimit = await startFreshStack({ limits: { maxResponseBodyBytes: size - 1 } }, atLimit.origin);
    try {
      const stored = await twice(atLimit, TODO);
      const passed = await twice(belowLimit, TODO);
      expect(statuses([...stored, ...passed])).toEqual(['MISS', 'HIT', 'PASS', 'PASS']);
      expect([...stored, ...passed].map((result) => [result.status, result.text])).toEqual(Array(4).fill([200, TODO_BODY]));
      expect(atLimit.origin.requestCount()).toBe(3);
    } finally {
      await belowLimit.close();
      await atLimit.close();
    }
  });
});
