import { describe, expect, it } from 'vitest';
import { postGraphQL, type GraphQLHttpResult } from '../support/origin.js';
import { postGraphQLRaw } from '../support/rawHttp.js';
import { startStack, type ConfigInput, useStack } from '../support/stack.js';

/**
 * Scope buckets end to end (client -> gateway -> real ext_proc gRPC -> sidecar -> demo origin): which
 * requests share a cached answer and which never see each other's. The demo origin answers `me` per
 * `Authorization: Bearer alice` / `Bearer bob`, and `time` differently on every call, so a body shows
 * which origin call it came from.
 */

const SCOPED_CONFIG: ConfigInput = {
  scopes: {
    AUTHENTICATED: 'header:authorization',
    SESSION: 'cookie:session',
    TEAM: 'header:X-Team|cookie:team',
  },
  rules: [
    { description: 'everything else, shared', types: ['Query'], maxAge: 60 },
    { description: 'per user', types: { Query: ['me'] }, maxAge: 60, scope: 'AUTHENTICATED' },
    { description: 'per session', types: { Query: ['time'] }, maxAge: 60, scope: 'SESSION' },
    { description: 'per team', types: { Query: ['users'] }, maxAge: 60, scope: 'TEAM' },
  ],
};

const ME = '{ me { id name email } }';
const TIME = '{ time }';
const USERS = '{ users { id name } }';
const TODOS = '{ todos { id title done } }';

const ALICE = '{"data":{"me":{"id":"u1","name":"Alice","email":"alice@example.com"}}}';
const BOB = '{"data":{"me":{"id":"u2","name":"Bob","email":"bob@example.com"}}}';
const NOBODY = '{"data":{"me":null}}';
const USERS_BODY = '{"data":{"users":[{"id":"u1","name":"Alice"},{"id":"u2","name":"Bob"}]}}';
const TODOS_BODY = JSON.stringify({
  data: {
    todos: [
      { id: '1', title: 'Buy milk', done: false },
      { id: '2', title: 'Write the report', done: true },
      { id: '3', title: 'Walk the dog', done: false },
    ],
  },
});

function statuses(results: readonly GraphQLHttpResult<unknown>[]): Array<string | undefined> {
  return results.map((result) => result.headers['svc-cache']);
}

function bodies(results: readonly GraphQLHttpResult<unknown>[]): string[] {
  return results.map((result) => result.text);
}

describe('scope buckets through the gateway', () => {
  const stack = useStack(SCOPED_CONFIG);

  it('gives two Authorization values separate MISS/HIT sequences, each with its own data only', async () => {
    const alice = { authorization: 'Bearer alice' };
    const bob = { authorization: 'Bearer bob' };
    const results = [
      await postGraphQL(stack().url, { query: ME }, alice),
      await postGraphQL(stack().url, { query: ME }, bob),
      await postGraphQL(stack().url, { query: ME }, alice),
      await postGraphQL(stack().url, { query: ME }, bob),
    ];
    expect(statuses(results)).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(bodies(results)).toEqual([ALICE, BOB, ALICE, BOB]);
    expect(results.map((result) => result.status)).toEqual([200, 200, 200, 200]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('labels scoped answers private and varying on the scope header, MISS and HIT alike; HITs carry age', async () => {
    const alice = { authorization: 'Bearer alice' };
    const miss = await postGraphQL(stack().url, { query: ME }, alice);
    const hit = await postGraphQL(stack().url, { query: ME }, alice);
    expect(miss.headers['cache-control']).toBe('private, no-cache');
    expect(miss.headers['vary']).toBe('authorization');
    expect(miss.headers['age']).toBeUndefined();
    expect(hit.headers['svc-cache']).toBe('HIT');
    expect(hit.headers['cache-control']).toBe('private, no-cache');
    expect(hit.headers['vary']).toBe('authorization');
    expect(hit.headers['age']).toBe('0');
    expect(hit.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(hit.headers['content-length']).toBe(String(Buffer.byteLength(ALICE)));
  });

  it('replaces the origin cache-control of a scoped answer and adds the scope header to the origin vary', async () => {
    stack().origin.setBehaviour({ headers: { 'cache-control': 'public, max-age=60', vary: 'Accept' } });
    const miss = await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice' });
    const hit = await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice' });
    expect(statuses([miss, hit])).toEqual(['MISS', 'HIT']);
    expect([miss.headers['cache-control'], hit.headers['cache-control']]).toEqual(['private, no-cache', 'private, no-cache']);
    expect([miss.headers['vary'], hit.headers['vary']]).toEqual(['Accept, authorization', 'Accept, authorization']);
    expect(bodies([miss, hit])).toEqual([ALICE, ALICE]);
  });

  it('withholds from a scoped answer every header that lets a CDN store it whatever cache-control says, MISS and HIT alike', async () => {
    stack().origin.setBehaviour({
      headers: {
        'cache-control': 'public, max-age=60',
        'cdn-cache-control': 'max-age=600',
        'cloudflare-cdn-cache-control': 'max-age=600',
        'akamai-cache-control': 'max-age=600',
        'surrogate-control': 'max-age=600',
        'edge-control': 'cache-maxage=600s',
        'x-accel-expires': '600',
        'x-kept': 'yes',
      },
    });
    const [miss, hit] = [await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice' }), await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice' })];
    expect(statuses([miss, hit])).toEqual(['MISS', 'HIT']);
    const grants = ['cdn-cache-control', 'cloudflare-cdn-cache-control', 'akamai-cache-control', 'surrogate-control', 'edge-control', 'x-accel-expires'];
    for (const answer of [miss, hit]) {
      expect(grants.map((name) => answer.headers[name])).toEqual(grants.map(() => undefined));
      expect([answer.headers['cache-control'], answer.headers['x-kept']]).toEqual(['private, no-cache', 'yes']);
    }
    expect(bodies([miss, hit])).toEqual([ALICE, ALICE]);
  });

  it('names every header of a combined scope in vary, and cookie for a cookie scope', async () => {
    const team = await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'red', cookie: 'team=1' });
    const teamHit = await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'red', cookie: 'team=1' });
    const session = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1' });
    const sessionHit = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1' });
    expect(statuses([team, teamHit, session, sessionHit])).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
    expect([team.headers['vary'], teamHit.headers['vary']]).toEqual(['cookie, x-team', 'cookie, x-team']);
    expect([session.headers['vary'], sessionHit.headers['vary']]).toEqual(['cookie', 'cookie']);
    expect(teamHit.headers['cache-control']).toBe('private, no-cache');
    expect(sessionHit.headers['cache-control']).toBe('private, no-cache');
  });

  it('puts requests without the key in one shared bucket, apart from every keyed one', async () => {
    const results = [
      await postGraphQL(stack().url, { query: ME }),
      await postGraphQL(stack().url, { query: ME }),
      await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice' }),
      await postGraphQL(stack().url, { query: ME }),
    ];
    expect(statuses(results)).toEqual(['MISS', 'HIT', 'MISS', 'HIT']);
    expect(bodies(results)).toEqual([NOBODY, NOBODY, ALICE, NOBODY]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('passes a request in the bucket of no value that carries credentials its scope does not read', async () => {
    // The origin may know the user by them (a session cookie beside an Authorization scope), and the
    // bucket of no value is shared by everyone without the scope's own values.
    const results = [
      await postGraphQL(stack().url, { query: ME }),
      await postGraphQL(stack().url, { query: ME }, { cookie: 'sid=alice' }),
      await postGraphQL(stack().url, { query: ME }, { cookie: 'sid=bob' }),
      await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice', cookie: 'sid=alice' }),
      await postGraphQL(stack().url, { query: ME }, { authorization: 'Bearer alice', cookie: 'sid=alice' }),
      await postGraphQL(stack().url, { query: TIME }, { authorization: 'Bearer alice' }),
      await postGraphQL(stack().url, { query: TIME }, { authorization: 'Bearer alice' }),
      await postGraphQL(stack().url, { query: TIME }, { authorization: 'Bearer alice', cookie: 'session=s1' }),
      await postGraphQL(stack().url, { query: TIME }, { cookie: 'theme=dark' }),
    ];
    expect(statuses(results)).toEqual(['MISS', 'PASS', 'PASS', 'MISS', 'HIT', 'PASS', 'PASS', 'MISS', 'PASS']);
    expect(bodies(results.slice(0, 5))).toEqual([NOBODY, NOBODY, NOBODY, ALICE, ALICE]);
    expect(stack().origin.requestCount()).toBe(8);
  });

  it('passes a request whose scope value is empty when it carries credentials the scope does not read', async () => {
    // Apollo's documented auth link sends `authorization: ""` without a token: every cookie-session
    // user would share that bucket.
    const results = [
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', ''], ['cookie', 'sid=alice']]),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', ''], ['cookie', 'sid=bob']]),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', '']]),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', '']]),
    ];
    expect(statuses(results)).toEqual(['PASS', 'PASS', 'MISS', 'HIT']);
    expect(stack().origin.requestCount()).toBe(3);
  });

  it('tells a header sent empty from a header not sent', async () => {
    const results = [
      await postGraphQLRaw(stack().url, { query: ME }, []),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', '']]),
      await postGraphQLRaw(stack().url, { query: ME }, []),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', '']]),
    ];
    expect(statuses(results)).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(bodies(results)).toEqual([NOBODY, NOBODY, NOBODY, NOBODY]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('tells a cookie sent empty from a cookie not sent', async () => {
    const absent = await postGraphQL(stack().url, { query: TIME });
    const empty = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=' });
    const absentAgain = await postGraphQL(stack().url, { query: TIME });
    const emptyAgain = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=' });
    expect(statuses([absent, empty, absentAgain, emptyAgain])).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(empty.text).not.toBe(absent.text);
    expect(bodies([absentAgain, emptyAgain])).toEqual([absent.text, empty.text]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('keys a header sent twice on both values in order, never on the first alone', async () => {
    const aliceThenBob = [['authorization', 'Bearer alice'], ['authorization', 'Bearer bob']] as const;
    const bobThenAlice = [['authorization', 'Bearer bob'], ['authorization', 'Bearer alice']] as const;
    const results = [
      await postGraphQLRaw(stack().url, { query: ME }, aliceThenBob),
      await postGraphQLRaw(stack().url, { query: ME }, aliceThenBob),
      await postGraphQLRaw(stack().url, { query: ME }, bobThenAlice),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', 'Bearer alice']]),
      await postGraphQLRaw(stack().url, { query: ME }, bobThenAlice),
    ];
    expect(statuses(results)).toEqual(['MISS', 'HIT', 'MISS', 'MISS', 'HIT']);
    // Node's HTTP server, like most, reads the first of repeated Authorization lines.
    expect(bodies(results)).toEqual([ALICE, ALICE, BOB, ALICE, BOB]);
    expect(stack().origin.requestCount()).toBe(3);
  });

  it('treats header names case-insensitively: Authorization, authorization and AUTHORIZATION share a bucket', async () => {
    const results = [
      await postGraphQLRaw(stack().url, { query: ME }, [['Authorization', 'Bearer bob']]),
      await postGraphQLRaw(stack().url, { query: ME }, [['authorization', 'Bearer bob']]),
      await postGraphQLRaw(stack().url, { query: ME }, [['AUTHORIZATION', 'Bearer bob']]),
    ];
    expect(statuses(results)).toEqual(['MISS', 'HIT', 'HIT']);
    expect(bodies(results)).toEqual([BOB, BOB, BOB]);
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('keys a cookie scope on that cookie alone: other cookies are ignored, each session has its own bucket', async () => {
    const s1 = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1' });
    const s1WithOthers = await postGraphQL(stack().url, { query: TIME }, { cookie: 'theme=dark; session=s1; lang=en' });
    const s2 = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s2' });
    const s2WithOthers = await postGraphQL(stack().url, { query: TIME }, { cookie: 'a=1; session=s2' });
    const s1AgainOverTwoLines = await postGraphQLRaw(stack().url, { query: TIME }, [
      ['cookie', 'theme=light'],
      ['cookie', 'session=s1'],
    ]);
    expect(statuses([s1, s1WithOthers, s2, s2WithOthers, s1AgainOverTwoLines])).toEqual([
      'MISS',
      'HIT',
      'MISS',
      'HIT',
      'HIT',
    ]);
    expect(s1.json?.data).toEqual({ time: expect.any(String) });
    expect(s2.text).not.toBe(s1.text);
    expect(bodies([s1WithOthers, s2WithOthers, s1AgainOverTwoLines])).toEqual([s1.text, s2.text, s1.text]);
    expect(stack().origin.requestCount()).toBe(2);
  });

  it('passes a request whose scope cookie repeats with values that differ, and caches identical repeats', async () => {
    // Which one the origin reads is its parser's choice (Django and Tornado keep the last), so no
    // bucket holds its answer: `session=s1; session=s2` must never be served or stored under s1.
    const twoValues = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1; session=s2' });
    const s1 = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1' });
    const twoValuesAgain = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1; session=s2' });
    const lines: Array<[string, string]> = [['cookie', 'session=s1'], ['cookie', 'theme=dark; session=s2']];
    const overTwoLines = await postGraphQLRaw(stack().url, { query: TIME }, lines);
    const emptyThenValue = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=; session=s1' });
    const identicalRepeat = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1; theme=dark; session=s1' });
    expect(statuses([twoValues, s1, twoValuesAgain, overTwoLines, emptyThenValue, identicalRepeat])).toEqual(['PASS', 'MISS', 'PASS', 'PASS', 'PASS', 'HIT']);
    expect(twoValues.status).toBe(200);
    expect(twoValuesAgain.text).not.toBe(s1.text);
    expect(identicalRepeat.text).toBe(s1.text);
    expect(stack().origin.requestCount()).toBe(5);
    expect(stack().origin.requests[0]!.headers['cookie']).toBe('session=s1; session=s2');
  });

  it('passes a session cookie in another case, which ASP.NET reads as the session cookie, and keys it in no bucket', async () => {
    const otherCase = await postGraphQL(stack().url, { query: TIME }, { cookie: 'Session=s1' });
    const noCookie = await postGraphQL(stack().url, { query: TIME });
    const otherCookiesOnly = await postGraphQL(stack().url, { query: TIME }, { cookie: 'theme=dark' });
    const realSession = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s1' });
    // Other cookies alone: the origin may know the user by them, and the bucket of no value is shared.
    expect(statuses([otherCase, noCookie, otherCookiesOnly, realSession])).toEqual(['PASS', 'MISS', 'PASS', 'MISS']);
    expect(realSession.text).not.toBe(noCookie.text);
    expect(stack().origin.requestCount()).toBe(4);
  });

  it('finds the session cookie in a cookie header of many cookies', async () => {
    const others = Array.from({ length: 40 }, (_, index) => `c${index}=${'v'.repeat(index)}`);
    const crowded = [...others.slice(0, 25), 'session=s9', ...others.slice(25)].join('; ');
    const reordered = ['session=s9', ...others.reverse()].join('; ');
    const first = await postGraphQL(stack().url, { query: TIME }, { cookie: crowded });
    const alone = await postGraphQL(stack().url, { query: TIME }, { cookie: 'session=s9' });
    const again = await postGraphQL(stack().url, { query: TIME }, { cookie: reordered });
    expect(statuses([first, alone, again])).toEqual(['MISS', 'HIT', 'HIT']);
    expect(bodies([alone, again])).toEqual([first.text, first.text]);
    expect(stack().origin.requestCount()).toBe(1);
  });

  it('keys a combined scope on the header and the cookie together', async () => {
    const results = [
      await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'red', cookie: 'team=1' }),
      await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'red', cookie: 'team=1' }),
      await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'red', cookie: 'team=2' }),
      await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'blue', cookie: 'team=1' }),
      await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'red' }),
      await postGraphQL(stack().url, { query: USERS }, { 'x-team': 'blue', cookie: 'team=1' }),
    ];
    expect(statuses(results)).toEqual(['MISS', 'HIT', 'MISS', 'MISS', 'MISS', 'HIT']);
    expect(bodies(results)).toEqual(Array<string>(6).fill(USERS_BODY));
    expect(stack().origin.requestCount()).toBe(4);
  });

  it('never serves or stores a PUBLIC answer for a request with Authorization or Cookie', async () => {
    const anonymous = await postGraphQL(stack().url, { query: TODOS });
    const withAuthorization = await postGraphQL(stack().url, { query: TODOS }, { authorization: 'Bearer alice' });
    const withCookie = await postGraphQL(stack().url, { query: TODOS }, { cookie: 'theme=dark' });
    const withPlaceholder = await postGraphQL(stack().url, { query: TODOS }, { authorization: 'Bearer null' });
    const withAuthorizationAgain = await postGraphQL(stack().url, { query: TODOS }, { authorization: 'Bearer alice' });
    const anonymousAgain = await postGraphQL(stack().url, { query: TODOS });
    const results = [anonymous, withAuthorization, withCookie, withPlaceholder, withAuthorizationAgain, anonymousAgain];
    expect(statuses(results)).toEqual(['MISS', 'PASS', 'PASS', 'PASS', 'PASS', 'HIT']);
    expect(bodies(results)).toEqual(Array<string>(6).fill(TODOS_BODY));
    expect(stack().origin.requestCount()).toBe(5);
  });

  // The clients audit: Apollo's documented auth link sends `authorization: ""` from every client
  // without a token, so no anonymous PUBLIC query through it was ever cached.
  it('takes an empty Authorization or Cookie for none: a PUBLIC answer is served and stored for it', async () => {
    const emptyAuthorization = await postGraphQLRaw(stack().url, { query: TODOS }, [['authorization', '']]);
    const anonymous = await postGraphQL(stack().url, { query: TODOS });
    const emptyCookie = await postGraphQLRaw(stack().url, { query: TODOS }, [['cookie', ' ']]);
    expect(statuses([emptyAuthorization, anonymous, emptyCookie])).toEqual(['MISS', 'HIT', 'HIT']);
    expect(bodies([emptyAuthorization, anonymous, emptyCookie])).toEqual(Array<string>(3).fill(TODOS_BODY));
  });

  it('caches a query whose rules give it a scope for credentialed requests in that scope, not in PUBLIC', async () => {
    const query = '{ me { name } todos { id } }';
    const alice = await postGraphQL(stack().url, { query }, { authorization: 'Bearer alice' });
    const aliceAgain = await postGraphQL(stack().url, { query }, { authorization: 'Bearer alice' });
    const anonymous = await postGraphQL(stack().url, { query });
    expect(statuses([alice, aliceAgain, anonymous])).toEqual(['MISS', 'HIT', 'MISS']);
    expect(aliceAgain.text).toBe('{"data":{"me":{"name":"Alice"},"todos":[{"id":"1"},{"id":"2"},{"id":"3"}]}}');
    expect(anonymous.text).toBe('{"data":{"me":null,"todos":[{"id":"1"},{"id":"2"},{"id":"3"}]}}');
    expect(aliceAgain.headers['vary']).toBe('authorization');
  });

  it('ignores the request cache-control and headers not listed in bypassCacheHeaders', async () => {
    const first = await postGraphQL(stack().url, { query: TODOS });
    const noCache = await postGraphQL(stack().url, { query: TODOS }, { 'cache-control': 'no-cache', pragma: 'no-cache' });
    const bypass = await postGraphQL(stack().url, { query: TODOS }, { 'x-cache-bypass': '1' });
    expect(statuses([first, noCache, bypass])).toEqual(['MISS', 'HIT', 'HIT']);
  });
});

describe('scope options that change a stack', () => {
  it('serves credentialed requests from PUBLIC when cache.publicForCredentialedRequests is on', async () => {
    const stack = await startStack({ ...SCOPED_CONFIG, cache: { publicForCredentialedRequests: true } });
    stack.origin.reset();
    try {
      const results = [
        await postGraphQL(stack.url, { query: TODOS }, { authorization: 'Bearer alice' }),
        await postGraphQL(stack.url, { query: TODOS }),
        await postGraphQL(stack.url, { query: TODOS }, { cookie: 'session=s1' }),
        await postGraphQL(stack.url, { query: TODOS }, { authorization: 'Bearer bob' }),
      ];
      expect(statuses(results)).toEqual(['MISS', 'HIT', 'HIT', 'HIT']);
      expect(bodies(results)).toEqual(Array<string>(4).fill(TODOS_BODY));
      expect(results[3]?.headers['vary']).toBeUndefined();
      expect(results[3]?.headers['cache-control']).toBeUndefined();
      const aliceMe = await postGraphQL(stack.url, { query: ME }, { authorization: 'Bearer alice' });
      const bobMe = await postGraphQL(stack.url, { query: ME }, { authorization: 'Bearer bob' });
      expect(statuses([aliceMe, bobMe])).toEqual(['MISS', 'MISS']);
      expect(bodies([aliceMe, bobMe])).toEqual([ALICE, BOB]);
      expect(stack.origin.requestCount()).toBe(3);
    } finally {
      await stack.close();
    }
  });

  it('scopes a field however the query reaches it: alias, named fragment, inline fragment', async () => {
    // With PUBLIC open to credentialed requests, a scoped field missed here would leak one user's data to the next.
    const stack = await startStack({ ...SCOPED_CONFIG, cache: { publicForCredentialedRequests: true } });
    try {
      const asMe = (name: string): string => `{"data":{"me":{"name":"${name}"}}}`;
      for (const [query, alice, bob] of [
        ['{ who: me { name } }', '{"data":{"who":{"name":"Alice"}}}', '{"data":{"who":{"name":"Bob"}}}'],
        ['query { ...Viewer } fragment Viewer on Query { me { name } }', asMe('Alice'), asMe('Bob')],
        ['{ ... on Query { me { name } } }', asMe('Alice'), asMe('Bob')],
      ] as const) {
        const results = [
          await postGraphQL(stack.url, { query }, { authorization: 'Bearer alice' }),
          await postGraphQL(stack.url, { query }, { authorization: 'Bearer bob' }),
          await postGraphQL(stack.url, { query }, { authorization: 'Bearer alice' }),
        ];
        expect(statuses(results), query).toEqual(['MISS', 'MISS', 'HIT']);
        expect(bodies(results), query).toEqual([alice, bob, alice]);
        expect(results[2]?.headers['vary'], query).toBe('authorization');
      }
    } finally {
      await stack.close();
    }
  });

  // An outside audit: a rule naming an interface or a union matched queries only through it, so
  // `user { email }` under a scoped `{ Account: [email] }` was stored PUBLIC and served to every tenant.
  it('applies a rule on an interface or a union to the types that belong to it, selected directly', async () => {
    const stack = await startStack({
      scopes: { TEAM: 'header:X-Team' },
      rules: [
        { types: ['Query'], maxAge: 60 },
        { types: { Node: ['id'] }, maxAge: 60, scope: 'TEAM' },
        { types: ['SearchResult'], maxAge: 0 },
      ],
    });
    try {
      const query = '{ user(id: "u1") { id name } }';
      const results = [
        await postGraphQL(stack.url, { query }, { 'x-team': 'a' }),
        await postGraphQL(stack.url, { query }, { 'x-team': 'b' }),
        await postGraphQL(stack.url, { query }, { 'x-team': 'a' }),
      ];
      expect([...statuses(results), results[2]?.headers['vary']]).toEqual(['PASS', 'PASS', 'PASS', undefined]);
      const products = '{ products { sku name } }';
      expect(statuses([await postGraphQL(stack.url, { query: products }), await postGraphQL(stack.url, { query: products })])).toEqual(['PASS', 'PASS']);
      const withoutUnion = await startStack({ scopes: { TEAM: 'header:X-Team' }, rules: [{ types: ['Query'], maxAge: 60 }, { types: { Node: ['id'] }, maxAge: 60, scope: 'TEAM' }] });
      try {
        const scoped = [
          await postGraphQL(withoutUnion.url, { query }, { 'x-team': 'a' }),
          await postGraphQL(withoutUnion.url, { query }, { 'x-team': 'b' }),
          await postGraphQL(withoutUnion.url, { query }, { 'x-team': 'a' }),
        ];
        expect([...statuses(scoped), scoped[2]?.headers['vary']]).toEqual(['MISS', 'MISS', 'HIT', 'x-team']);
      } finally {
        await withoutUnion.close();
      }
    } finally {
      await stack.close();
    }
  });

  it('skips the cache for a request carrying a configured bypass header, even an empty one, in any case', async () => {
    const stack = await startStack({ ...SCOPED_CONFIG, cache: { bypassCacheHeaders: ['X-Cache-Bypass'] } });
    stack.origin.reset();
    try {
      const stored = await postGraphQL(stack.url, { query: TIME }, { cookie: 'session=s1' });
      const bypassed = await postGraphQLRaw(stack.url, { query: TIME }, [
        ['cookie', 'session=s1'],
        ['X-Cache-Bypass', '1'],
      ]);
      const bypassedEmpty = await postGraphQLRaw(stack.url, { query: TIME }, [
        ['cookie', 'session=s1'],
        ['x-cache-bypass', ''],
      ]);
      const cachedAgain = await postGraphQL(stack.url, { query: TIME }, { cookie: 'session=s1' });
      expect(statuses([stored, bypassed, bypassedEmpty, cachedAgain])).toEqual(['MISS', 'PASS', 'PASS', 'HIT']);
      expect(new Set(bodies([stored, bypassed, bypassedEmpty])).size).toBe(3);
      expect(cachedAgain.text).toBe(stored.text);
      expect(bypassed.headers['cache-control']).toBeUndefined();
      expect(bypassed.headers['vary']).toBeUndefined();
      expect(stack.origin.requestCount()).toBe(3);
    } finally {
      await stack.close();
    }
  });

  it('names the bypass headers in the vary of cached answers, and stores an answer whose origin varies on one', async () => {
    const stack = await startStack({ ...SCOPED_CONFIG, cache: { bypassCacheHeaders: ['X-Cache-Bypass'] } });
    try {
      // A PUBLIC answer keeps the origin's cache-control, so a cache downstream may store it: it
      // must not give it to a request that bypasses svc-cache (Stellate's vary says the same).
      stack.origin.setBehaviour({ headers: { 'cache-control': 'public, max-age=60' } });
      const publicAnswers = [await postGraphQL(stack.url, { query: TODOS }), await postGraphQL(stack.url, { query: TODOS })];
      expect(statuses(publicAnswers)).toEqual(['MISS', 'HIT']);
      expect(publicAnswers.map((result) => [result.headers['vary'], result.headers['cache-control']])).toEqual([
        ['x-cache-bypass', 'public, max-age=60'],
        ['x-cache-bypass', 'public, max-age=60'],
      ]);
      const session = { cookie: 'session=s1' };
      const scoped = [await postGraphQL(stack.url, { query: TIME }, session), await postGraphQL(stack.url, { query: TIME }, session)];
      expect(statuses(scoped)).toEqual(['MISS', 'HIT']);
      expect(scoped.map((result) => [result.headers['vary'], result.headers['cache-control']])).toEqual([
        ['cookie, x-cache-bypass', 'private, no-cache'],
        ['cookie, x-cache-bypass', 'private, no-cache'],
      ]);
      // No request that sends the header reads an entry, so its absence is in the key.
      stack.origin.setBehaviour({ headers: { vary: 'X-Cache-Bypass' } });
      const varied = [await postGraphQL(stack.url, { query: '{ todos { id } }' }), await postGraphQL(stack.url, { query: '{ todos { id } }' })];
      expect(statuses(varied)).toEqual(['MISS', 'HIT']);
      expect(varied[1]?.headers['vary']).toBe('X-Cache-Bypass, x-cache-bypass');
    } finally {
      await stack.close();
    }
  });
});
