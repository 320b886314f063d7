import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postGraphQL, type GraphQLHttpResult } from '../support/origin.js';
import { HS_SECRET, hsToken, noneToken, rsaKey, rsToken, startJwksServer, withPayload, type JwksServer, type SigningKey } from '../support/jwt.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from '../support/redis.js';
import { type ConfigInput, useStack } from '../support/stack.js';

/**
 * JWT-claim scopes end to end (client -> gateway -> ext_proc -> sidecar -> demo origin), on the
 * memory store and on a real Redis: a user's refreshed token keeps their HITs, and a token that
 * fails verification (a forged signature, alg none, expired) gets nothing of anyone's bucket and
 * passes with the failed check as its reason. `time` answers differently on every origin call.
 */

const PURGE_TOKEN = 'jwt-scopes-purge-token-0123456789';
const DEBUG = { 'svc-debug': '1', 'svc-purge-token': PURGE_TOKEN };
const TIME = '{ time }';
const USERS = '{ users { id name } }';

function config(jwksUrl: string, redisUrl: string | undefined): ConfigInput {
  return {
    scopes: {
      USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['HS256'], secret: HS_SECRET, issuer: 'https://auth.test' } },
      ORG: { definition: 'cookie:session', jwt: { claim: 'org.id', algorithms: ['RS256'], jwksUrl } },
    },
    rules: [
      { description: 'per user', types: { Query: ['time'] }, maxAge: 60, scope: 'USER' },
      { description: 'per organisation', types: { Query: ['users'] }, maxAge: 60, scope: 'ORG' },
    ],
    purge: { tokens: [PURGE_TOKEN] },
    ...(redisUrl === undefined ? {} : { redis: { url: redisUrl, keyPrefix: 'svc-cache:', commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS } }),
  };
}

const user = (sub: string, expiresIn: string | number = '1h') => hsToken({ sub, iss: 'https://auth.test' }, { expiresIn });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function outcome(result: GraphQLHttpResult<unknown>): [string | undefined, string | undefined] {
  return [result.headers['svc-cache'], result.headers['svc-debug-pass-reason']];
}

describe.each(['memory', 'redis'] as const)('JWT-claim scopes through the gateway (%s store)', (storeKind) => {
  let redis: RedisServer | undefined;
  let jwks: JwksServer;
  let signing: SigningKey;

  beforeAll(async () => {
    signing = await rsaKey('org-key-1');
    jwks = await startJwksServer([signing]);
    if (storeKind === 'redis') redis = await startRedisServer();
  });
  afterAll(async () => {
    await jwks?.close();
    await redis?.stop();
  });
  const stack = useStack(() => config(jwks.url, redis?.url));

  it("keeps a user's HITs across a token refresh (a new token, the same sub), and keeps users apart", async () => {
    const [first, refreshed, bob] = [await user('alice', '1h'), await user('alice', '2h'), await user('bob')];
    expect(first).not.toBe(refreshed);
    const results = [
      await postGraphQL(stack().url, { query: TIME }, bearer(first)),
      await postGraphQL(stack().url, { query: TIME }, bearer(refreshed)),
      await postGraphQL(stack().url, { query: TIME }, bearer(bob)),
      await postGraphQL(stack().url, { query: TIME }, bearer(first)),
    ];
    expect(results.map((result) => result.headers['svc-cache'])).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
    expect(results[1]!.text).toBe(results[0]!.text);
    expect(results[3]!.text).toBe(results[0]!.text);
    expect(results[2]!.text).not.toBe(results[0]!.text);
    expect([results[1]!.headers['cache-control'], results[1]!.headers['vary']]).toEqual(['private, no-cache', 'authorization']);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it("gives a forged token with the victim's sub nothing of the victim's: PASS with the failed check", async () => {
    const victim = await postGraphQL(stack().url, { query: TIME }, bearer(await user('alice')));
    const attacker = await user('mallory');
    const forgeries = [
      withPayload(attacker, { sub: 'alice', iss: 'https://auth.test' }),
      await hsToken({ sub: 'alice', iss: 'https://auth.test' }, { secret: 'the-attackers-own-secret-32-bytes' }),
    ];
    for (const forged of forgeries) {
      const result = await postGraphQL(stack().url, { query: TIME }, { ...bearer(forged), ...DEBUG });
      expect(outcome(result)).toEqual(['PASS', 'jwt-invalid-signature']);
      expect(result.text).not.toBe(victim.text);
    }
    // Nothing was stored under the victim's bucket meanwhile: the victim still gets their own answer.
    const again = await postGraphQL(stack().url, { query: TIME }, bearer(await user('alice', '3h')));
    expect([again.headers['svc-cache'], again.text]).toEqual(['HIT', victim.text]);
    expect(stack().origin.requestCount()).toBe(3);
  });

  it('passes alg none, an expired token, another issuer and a non-JWT bearer value, each with its code, and stores none', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, string]> = [
      [noneToken({ sub: 'alice', iss: 'https://auth.test' }), 'jwt-algorithm-not-allowed'],
      [await hsToken({ sub: 'alice', iss: 'https://auth.test', exp: now - 60 }), 'jwt-expired'],
      [await hsToken({ sub: 'alice', iss: 'https://elsewhere.test' }), 'jwt-wrong-issuer'],
      [await hsToken({ iss: 'https://auth.test' }), 'jwt-claim-missing'],
      ['alice', 'jwt-malformed'],
    ];
    for (const [token, reason] of cases) {
      const twice = [await postGraphQL(stack().url, { query: TIME }, { ...bearer(token), ...DEBUG }), await postGraphQL(stack().url, { query: TIME }, { ...bearer(token), ...DEBUG })];
      expect(twice.map(outcome)).toEqual([['PASS', reason], ['PASS', reason]]);
    }
    expect(stack().origin.requestCount()).toBe(cases.length * 2);
  });

  it("reads the token only from the Bearer scheme: a user's token without it gets none of their answers", async () => {
    // Origins that extract bearer tokens answer `Authorization: <jwt>` with a 401.
    const token = await user('alice');
    const stored = await postGraphQL(stack().url, { query: TIME }, bearer(token));
    const results = [
      await postGraphQL(stack().url, { query: TIME }, { authorization: token, ...DEBUG }),
      await postGraphQL(stack().url, { query: TIME }, { authorization: `Token ${token}`, ...DEBUG }),
      await postGraphQL(stack().url, { query: TIME }, { authorization: `BEARER   ${token}`, ...DEBUG }),
    ];
    expect([stored, ...results].map(outcome)).toEqual([
      ['MISS', undefined],
      ['PASS', 'jwt-malformed'],
      ['PASS', 'jwt-malformed'],
      ['HIT', undefined],
    ]);
    expect(results.map((result) => result.text === stored.text)).toEqual([false, false, true]);
    expect(stack().origin.requestCount()).toBe(3);
  });

  it('serves a request without a token from the scope absent bucket, apart from every user', async () => {
    const results = [
      await postGraphQL(stack().url, { query: TIME }),
      await postGraphQL(stack().url, { query: TIME }, bearer(await user('alice'))),
      await postGraphQL(stack().url, { query: TIME }),
    ];
    expect(results.map((result) => result.headers['svc-cache'])).toEqual(['MISS', 'MISS', 'HIT']);
    expect(results[2]!.text).toBe(results[0]!.text);
    expect(results[1]!.text).not.toBe(results[0]!.text);
  });

  it('keys an RS256 cookie token from a JWKS on a dotted claim: one bucket per organisation', async () => {
    const session = async (sub: string, org: string) => ({ cookie: `session=${await rsToken(signing, { sub, org: { id: org } })}` });
    const results = [
      await postGraphQL(stack().url, { query: USERS }, await session('alice', 'acme')),
      await postGraphQL(stack().url, { query: USERS }, await session('bob', 'acme')),
      await postGraphQL(stack().url, { query: USERS }, await session('carol', 'globex')),
      await postGraphQL(stack().url, { query: USERS }, { ...(await session('dave', 'globex')), ...DEBUG }),
    ];
    expect(results.map((result) => result.headers['svc-cache'])).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
    expect(results[3]!.headers['svc-debug-scope']).toBe('ORG');
    expect(stack().origin.requestCount()).toBe(2);
    const stranger = await rsToken(await rsaKey('org-key-unknown'), { sub: 'eve', org: { id: 'acme' } });
    const refused = await postGraphQL(stack().url, { query: USERS }, { cookie: `session=${stranger}`, ...DEBUG });
    expect(outcome(refused)).toEqual(['PASS', 'jwt-key-unavailable']);
  });
});
