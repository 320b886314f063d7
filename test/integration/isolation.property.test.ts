import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startGateway } from '../../src/gateway/index.js';
import {
  AUTHORIZATIONS,
  clearsEntry,
  COOKIES,
  mutationCase,
  mutationClears,
  PURGE_NAMES,
  PURGES,
  QUERIES,
  QUERY_NAMES,
  resolveRead,
  seedState,
  SKUS,
  TODO_IDS,
  USER_IDS,
  USER_TOKENS,
  type AuthorizationName,
  type CookieName,
  type DemoState,
  type ModelEntry,
  type MutationPolicy,
  type PurgeCase,
  type Read,
  type ResolvedRead,
  type Scope,
  type UserTokenName,
  type Write,
} from '../support/cacheModel.js';
import { HS_SECRET, hsToken, noneToken, withPayload } from '../support/jwt.js';
import type { GraphQLHttpResult } from '../support/origin.js';
import { postGraphQLRaw, type RawHeaderLine } from '../support/rawHttp.js';
import { startRedisServer, type RedisServer } from '../support/redis.js';
import { type ConfigInput, type Stack, useStack } from '../support/stack.js';

/**
 * The "Hardening" property: random sequences of scoped queries, mutations and purges through the
 * gateway, checked against a model of the origin's data and of what the cache may hold.
 *
 * - Isolation: a HIT carries only a body the model saw stored for the same query in the same scope
 *   bucket, and a MISS or PASS carries what the origin answers the request's own credentials.
 *   `time` is new on every origin call, so a HIT of it names the bucket that stored it.
 * - Freshness: once a purge has answered `true`, or a mutation has answered, nothing it clears is
 *   served again; under a mutation policy other than None no stale data is served at all. A soft
 *   purge (`soft: true`) is the exception it documents: what it clears may still be served, stale,
 *   to a read sent while another read of the same entry refreshes it, and never to a read alone.
 * - Nothing lost: an entry nothing cleared is served as a HIT, so a purge or a mutation that
 *   clears more than it names is caught as well as one that clears less.
 *
 * A step is one request, or a few reads sent at once with at most one write among them. While the
 * write is in flight the reads may see the data before or after it, but an entry the write clears
 * that is stored again must hold data fetched after it (docs/graphql-caching.md, Invalidation).
 */

const PURGE_TOKEN = 'isolation-purge-token-0123456789';

const BASE_CONFIG: ConfigInput = {
  scopes: {
    AUTHENTICATED: 'header:authorization',
    SESSION: 'cookie:session',
    USER: { definition: 'header:x-user-token', jwt: { claim: 'sub', algorithms: ['HS256'], secret: HS_SECRET } },
  },
  // swr only matters to soft purges: nothing expires within a run, and hard invalidations remove.
  rules: [
    { description: 'every query, shared', types: ['Query'], maxAge: 60, swr: 30 },
    { description: 'per user', types: { Query: ['me'] }, maxAge: 60, swr: 30, scope: 'AUTHENTICATED' },
    { description: 'per session', types: { Query: ['time'] }, maxAge: 60, swr: 30, scope: 'SESSION' },
    { description: 'and per verified user', types: { Query: ['time'] }, maxAge: 60, swr: 30, scope: 'USER' },
  ],
  keyFields: { defaults: ['id'], types: { Product: ['sku'] } },
  purge: { tokens: [PURGE_TOKEN] },
};

interface Variant {
  store: 'memory' | 'redis';
  mutationPolicy: MutationPolicy;
}

const VARIANTS: Variant[] = [
  { store: 'memory', mutationPolicy: 'Entity' },
  { store: 'memory', mutationPolicy: 'None' },
  { store: 'memory', mutationPolicy: 'List' },
  { store: 'memory', mutationPolicy: 'Type' },
  { store: 'redis', mutationPolicy: 'Entity' },
  { store: 'redis', mutationPolicy: 'None' },
];
const RUNS_PER_VARIANT = 25;
const MAX_STEPS_PER_RUN = 30;

/** Where one run's requests go: a gateway of its own in front of the variant's sidecar. */
type Target = Pick<Stack, 'url' | 'gateway' | 'sidecar'>;

/** One request, or several sent at once: reads and at most one write. */
interface Step {
  reads: Read[];
  write: Write | null;
  /**
   * Then reads every query and bucket the run has read so far, one at a time: each entry the write
   * cleared must MISS and each one it kept must HIT, not only those the random reads happen to hit.
   */
  readBack: boolean;
}

const authorizationArbitrary = fc.constantFrom(...(Object.keys(AUTHORIZATIONS) as AuthorizationName[]));
const cookieArbitrary = fc.constantFrom(...(Object.keys(COOKIES) as CookieName[]));
const userTokenArbitrary = fc.constantFrom(...(Object.keys(USER_TOKENS) as UserTokenName[]));

/** The signed `x-user-token` values (USER_TOKENS), made once: `alice refreshed` differs from `alice` in its exp. */
const userTokens: Partial<Record<UserTokenName, string>> = {};

beforeAll(async () => {
  const now = Math.floor(Date.now() / 1000);
  const bob = await hsToken({ sub: 'bob' }, { expiresIn: '2h' });
  Object.assign(userTokens, {
    alice: await hsToken({ sub: 'alice' }, { expiresIn: '2h' }),
    'alice refreshed': await hsToken({ sub: 'alice' }, { expiresIn: '3h' }),
    bob,
    'alice forged with a wrong signature': withPayload(bob, { sub: 'alice', exp: now + 7200 }),
    'alice with alg none': noneToken({ sub: 'alice' }),
    'alice expired': await hsToken({ sub: 'alice', exp: now - 60 }),
  });
});

const rarely = <T>(arbitrary: fc.Arbitrary<T>, absent: T) => fc.oneof({ weight: 4, arbitrary: fc.constant(absent) }, { weight: 1, arbitrary });

/** Mostly without the credentials a query's scope does not read, or PUBLIC queries would never be cached. */
function credentialsFor(
  scope: Scope,
  userToken: boolean,
): fc.Arbitrary<{ authorization: AuthorizationName; cookie: CookieName; userToken: UserTokenName }> {
  return fc.record({
    authorization: scope === 'AUTHENTICATED' ? authorizationArbitrary : rarely(authorizationArbitrary, 'absent'),
    cookie: scope === 'SESSION' ? cookieArbitrary : rarely(cookieArbitrary, 'absent'),
    userToken: userToken ? userTokenArbitrary : rarely(userTokenArbitrary, 'absent'),
  });
}

const anyRead: fc.Arbitrary<Read> = fc.constantFrom(...QUERY_NAMES).chain((query) => {
  const { scope, userToken } = QUERIES[query] as { scope: Scope; userToken?: true };
  return credentialsFor(scope, userToken === true).map((credentials) => ({ query, ...credentials }));
});

/** `time` (SESSION and USER) mostly without a session, so that the users' JWT buckets meet often. */
const userTokenRead: fc.Arbitrary<Read> = fc.record({
  query: fc.constant('time' as const),
  authorization: rarely(authorizationArbitrary, 'absent'),
  cookie: rarely(cookieArbitrary, 'absent'),
  userToken: userTokenArbitrary,
});

const readArbitrary: fc.Arbitrary<Read> = fc.oneof({ weight: 4, arbitrary: anyRead }, { weight: 1, arbitrary: userTokenRead });

const writeArbitrary: fc.Arbitrary<Write> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('renameTodo'),
      todo: fc.constantFrom(...TODO_IDS),
      selectAuthor: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('renameMissingTodo') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('repriceProduct'), sku: fc.constantFrom(...SKUS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('renameUser'), user: fc.constantFrom(...USER_IDS) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('purge'),
      purge: fc.constantFrom(...PURGE_NAMES),
      token: fc.oneof(
        { weight: 4, arbitrary: fc.constant('valid' as const) },
        { weight: 1, arbitrary: fc.constant('wrong' as const) },
      ),
    }),
  },
);

const readBackArbitrary = fc.oneof(
  { weight: 2, arbitrary: fc.constant(false) },
  { weight: 1, arbitrary: fc.constant(true) },
);

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { weight: 10, arbitrary: readArbitrary.map((read): Step => ({ reads: [read], write: null, readBack: false })) },
  {
    weight: 4,
    arbitrary: fc.record({ reads: fc.constant<Read[]>([]), write: writeArbitrary, readBack: readBackArbitrary }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      reads: fc.array(readArbitrary, { minLength: 2, maxLength: 5 }),
      write: fc.option(writeArbitrary),
      readBack: readBackArbitrary,
    }),
  },
);

const stepsArbitrary = fc.array(stepArbitrary, { minLength: 1, maxLength: MAX_STEPS_PER_RUN, size: 'max' });

/** The model for one variant: reset to the seed before each run. */
class CacheModel {
  state: DemoState = seedState();
  readonly entries = new Map<string, ModelEntry>();
  private labels = 0;
  /** Every `time` the origin answered: each origin call gives a new one. */
  private readonly times = new Set<string>();

  constructor(readonly policy: MutationPolicy) {}

  reset(): void {
    this.state = seedState();
    this.entries.clear();
  }

  nextLabel(): number {
    return ++this.labels;
  }

  /**
   * Whether `body` is what the origin answers the read with the data before or after the write;
   * a `time` counts once only, since the origin never answers the same one twice.
   */
  isOriginAnswer(read: ResolvedRead, body: string, before: DemoState, after: DemoState): boolean {
    const expected = [read.answer(before), read.answer(after)];
    if (expected[0] !== undefined) return expected.includes(body);
    const time = /^\{"data":\{"time":"([^"]+)"\}\}$/.exec(body)?.[1];
    if (time === undefined || this.times.has(time)) return false;
    this.times.add(time);
    return true;
  }
}

interface Tally {
  runs: number;
  steps: number;
  requests: number;
  statuses: Record<string, number>;
}

function headerLines(read: Read): RawHeaderLine[] {
  const cookie = COOKIES[read.cookie].header;
  const userToken = userTokens[read.userToken];
  return [
    ...AUTHORIZATIONS[read.authorization].lines.map((value): RawHeaderLine => ['authorization', value]),
    ...(cookie === null ? [] : [['cookie', cookie] as const]),
    ...(userToken === undefined ? [] : [['x-user-token', `Bearer ${userToken}`] as const]),
  ];
}

function describeResponse(response: GraphQLHttpResult<unknown>): string {
  return `${response.status} ${response.headers['svc-cache'] ?? '(no svc-cache header)'} ${response.text}`;
}

/**
 * What the gateway and the sidecar counted that explains an unexpected answer: a response without
 * `svc-cache` went around the sidecar (failure_mode_allow), and a failing store turns MISS into PASS.
 */
async function diagnosis(target: Target): Promise<string> {
  const { streams_started, streams_failed, message_timeouts } = target.gateway.stats.counters;
  const storeErrors = (await target.sidecar.metrics.registry.getSingleMetricAsString('svc_cache_store_errors_total'))
    .split('\n')
    .filter((line) => line.startsWith('svc_cache_store_errors_total{'));
  return (
    ` [gateway: ${streams_failed} failed and ${message_timeouts} timed-out ext_proc streams of ${streams_started};` +
    ` sidecar store errors: ${storeErrors.join(', ') || 'none'}]`
  );
}

/** What is wrong with a read's answer, if anything. */
function readProblem(
  model: CacheModel,
  read: ResolvedRead,
  response: GraphQLHttpResult<unknown>,
  step: { before: DemoState; after: DemoState; raced: boolean; filledNow: readonly string[]; sharedWithAnotherRead: boolean },
): string | undefined {
  const status = response.headers['svc-cache'];
  const entry = model.entries.get(read.key);
  const fromOrigin = () => model.isOriginAnswer(read, response.text, step.before, step.after);
  if (response.status !== 200) return 'not 200';
  if (read.passes) {
    if (status !== 'PASS') {
      return 'a PUBLIC query with credentials, a scoped one in its bucket of no value with credentials its scopes do not read, or one with a forged, unsigned or expired user token, was not PASS';
    }
    return fromOrigin() ? undefined : 'PASS with another body than the origin answers';
  }
  switch (status) {
    case 'HIT':
      if (entry?.stale && !step.sharedWithAnotherRead && !step.filledNow.includes(response.text)) {
        return 'HIT of a soft-purged entry that no other read was refreshing';
      }
      return entry?.bodies.has(response.text) || step.filledNow.includes(response.text)
        ? undefined
        : 'HIT with a body not stored in this bucket, or cleared by an acknowledged purge or mutation';
    case 'MISS':
      if (entry?.certain && !step.raced) return 'MISS although the entry was stored and nothing cleared it';
      return fromOrigin() ? undefined : 'MISS with another body than the origin answers these credentials';
    case 'PASS':
      if (!step.raced) return 'PASS of a cacheable query that no write in flight could have raced';
      return fromOrigin() ? undefined : 'PASS with another body than the origin answers these credentials';
    default:
      return 'no HIT, MISS or PASS';
  }
}

/** A write as sent, what the model expects it to answer, and the tags it clears once acknowledged. */
interface SentWrite {
  response: Promise<GraphQLHttpResult<unknown>>;
  expected: { status: number; cacheStatus?: string; body?: string };
  cleared: string[] | 'all' | null;
  /** What it clears is marked stale, not removed. */
  soft: boolean;
}

function sendWrite(target: Target, model: CacheModel, write: Write, after: DemoState): SentWrite {
  if (write.kind === 'purge') {
    const purge: PurgeCase = PURGES[write.purge];
    if (write.token === 'wrong') {
      return {
        response: postGraphQLRaw(target.url, { query: purge.text }, [['svc-purge-token', `${PURGE_TOKEN}-wrong`]]),
        // Not a purge without a valid token: the origin answers its syntax error (README, Purge API).
        expected: purge.parsesOnlyWithToken ? { status: 200, cacheStatus: 'PASS' } : { status: 401 },
        cleared: null,
        soft: false,
      };
    }
    return {
      response: postGraphQLRaw(target.url, { query: purge.text }, [['svc-purge-token', PURGE_TOKEN]]),
      expected: {
        status: 200,
        cacheStatus: 'PASS',
        body: JSON.stringify({ data: Object.fromEntries(purge.fields.map((field) => [field, true])) }),
      },
      cleared: purge.clears,
      soft: purge.soft === true,
    };
  }
  const mutation = mutationCase(write, model.nextLabel(), model.state);
  mutation.apply(after);
  return {
    response: postGraphQLRaw(target.url, { query: mutation.text }, []),
    expected: { status: 200, cacheStatus: 'PASS', body: JSON.stringify({ data: mutation.answer }) },
    cleared: mutationClears(model.policy, mutation.returned),
    soft: false,
  };
}

/** The bodies the step's reads got with this cache status, by model key. */
function bodiesWithStatus(
  reads: readonly ResolvedRead[],
  responses: ReadonlyArray<GraphQLHttpResult<unknown>>,
  status: 'HIT' | 'MISS',
): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  reads.forEach((read, index) => {
    const response = responses[index]!;
    if (read.passes || response.headers['svc-cache'] !== status) return;
    byKey.set(read.key, [...(byKey.get(read.key) ?? []), response.text]);
  });
  return byKey;
}

function count(tally: Tally, responses: ReadonlyArray<GraphQLHttpResult<unknown> | undefined>): void {
  tally.steps += 1;
  for (const response of responses) {
    if (!response) continue;
    tally.requests += 1;
    const status = response.headers['svc-cache'] ?? `bypassed ${response.status}`;
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
  }
}

async function runStep(target: Target, model: CacheModel, step: Step, tally: Tally): Promise<void> {
  const before = model.state;
  const after = structuredClone(before);
  const write = step.write && sendWrite(target, model, step.write, after);
  const reads = step.reads.map(resolveRead);
  const [writeResponse, ...readResponses] = await Promise.all([
    write?.response,
    ...reads.map(({ read }) => postGraphQLRaw(target.url, { query: QUERIES[read.query].text }, headerLines(read))),
  ]);
  count(tally, [writeResponse, ...readResponses]);

  if (write && writeResponse) {
    const { expected } = write;
    if (
      writeResponse.status !== expected.status ||
      (expected.cacheStatus !== undefined && writeResponse.headers['svc-cache'] !== expected.cacheStatus) ||
      (expected.body !== undefined && writeResponse.text !== expected.body)
    ) {
      throw new Error(
        `write ${JSON.stringify(step.write)} answered ${describeResponse(writeResponse)}, expected ` +
          `${expected.status} ${expected.cacheStatus ?? ''} ${expected.body ?? ''}${await diagnosis(target)}`,
      );
    }
  }

  const cleared = write?.cleared ?? null;
  const missesByKey = bodiesWithStatus(reads, readResponses, 'MISS');
  const hitsByKey = bodiesWithStatus(reads, readResponses, 'HIT');
  const readsOfKey = (key: string) => reads.filter((read) => read.key === key).length;
  for (const [index, read] of reads.entries()) {
    const response = readResponses[index]!;
    const problem = readProblem(model, read, response, {
      before,
      after,
      raced: clearsEntry(cleared, read.tags),
      filledNow: missesByKey.get(read.key) ?? [],
      sharedWithAnotherRead: readsOfKey(read.key) > 1,
    });
    if (problem) {
      const entry = model.entries.get(read.key);
      const held = entry ? `${entry.certain ? 'holds' : 'may hold'} ${[...entry.bodies].join(' or ')}` : 'holds nothing';
      throw new Error(
        `${problem}: read ${JSON.stringify(read.read)} answered ${describeResponse(response)}; for ${read.key} ` +
          `the model ${held} and the origin answers ${read.answer(after) ?? 'a new time'}${await diagnosis(target)}`,
      );
    }
  }

  for (const [key, entry] of model.entries) {
    if (!clearsEntry(cleared, entry.read.tags)) continue;
    if (write?.soft) model.entries.set(key, { ...entry, certain: false, stale: true });
    else model.entries.delete(key);
  }
  for (const read of reads) {
    const misses = missesByKey.get(read.key) ?? [];
    const hits = hitsByKey.get(read.key) ?? [];
    if (clearsEntry(cleared, read.tags)) {
      // Stored after the write's invalidation only if fetched after it, so only with the new data.
      const current = read.answer(after);
      const fresh = misses.filter((body) => current === undefined || body === current);
      if (fresh.length > 0) model.entries.set(read.key, { bodies: new Set(fresh), certain: false, read });
    } else if (misses.length > 0) {
      model.entries.set(read.key, { bodies: new Set(misses), certain: true, read });
    } else if (hits.length > 0 && !model.entries.get(read.key)?.stale) {
      // A stale HIT refreshes nothing: the entry stays stale until a read stores a fresh answer.
      model.entries.set(read.key, { bodies: new Set(hits), certain: true, read });
    }
  }
  model.state = after;

  if (model.policy === 'None') return;
  for (const [key, entry] of model.entries) {
    const current = entry.read.answer(after);
    if (current !== undefined && [...entry.bodies].some((body) => body !== current)) {
      throw new Error(
        `mutation policy ${model.policy} leaves ${key} stale: ${[...entry.bodies].join(' or ')}; ` +
          `the origin answers ${current}`,
      );
    }
  }
}

/** The Redis store connects in the background and fails every call until it has. */
async function storeAnswering(stack: Stack): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await stack.sidecar.store.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const totals: Tally = { runs: 0, steps: 0, requests: 0, statuses: {} };

function summary(tally: Tally): string {
  const statuses = Object.entries(tally.statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status} ${count}`)
    .join(', ');
  return `${tally.runs} runs, ${tally.steps} steps, ${tally.requests} requests (${statuses})`;
}

afterAll(() => {
  console.log(`isolation property, all variants: ${summary(totals)}`);
});

const variantName = (variant: Variant) => `${variant.store} store, mutationPolicy ${variant.mutationPolicy}`;

const NAMED_VARIANTS = VARIANTS.map((variant) => [variantName(variant), variant] as const);

describe.each(NAMED_VARIANTS)('isolation and freshness, %s', (name, variant) => {
  let redis: RedisServer | undefined;
  const tally: Tally = { runs: 0, steps: 0, requests: 0, statuses: {} };

  beforeAll(async () => {
    if (variant.store === 'redis') redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
    for (const key of ['runs', 'steps', 'requests'] as const) totals[key] += tally[key];
    for (const [status, count] of Object.entries(tally.statuses)) {
      totals.statuses[status] = (totals.statuses[status] ?? 0) + count;
    }
    console.log(`isolation property, ${name}: ${summary(tally)}`);
  });

  const stack = useStack(
    () => ({
      ...BASE_CONFIG,
      mutationPolicy: variant.mutationPolicy,
      // A generous timeout, so that a slow store call on a loaded machine does not turn a MISS into
      // a PASS, and a key prefix of its own, which keeps out any other sidecar reaching this Redis.
      ...(redis
        ? { redis: { url: redis.url, keyPrefix: `isolation-${randomUUID()}:`, commandTimeoutMs: 5000 } }
        : {}),
    }),
    { freshEachTest: false },
  );
  beforeAll(async () => {
    await storeAnswering(stack());
  });

  it('serves nothing across buckets and nothing an acknowledged write cleared', { timeout: 300_000 }, async () => {
    const model = new CacheModel(variant.mutationPolicy);
    await fc.assert(
      fc.asyncProperty(stepsArbitrary, async (steps) => {
        tally.runs += 1;
        stack().origin.reset();
        await stack().sidecar.store.invalidateAll();
        model.reset();
        // A gateway, so a connection, per run: a run's verdict then depends on its own steps alone,
        // which shrinking needs, not on connection state (reset budgets, rotation) left by earlier runs.
        const gateway = await startGateway({
          processor: `127.0.0.1:${stack().sidecar.grpcPort}`,
          origin: stack().origin.url,
          port: 0,
        });
        const target: Target = { url: `${gateway.url}/graphql`, gateway, sidecar: stack().sidecar };
        try {
          const readSoFar = new Map<string, Read>();
          for (const step of steps) {
            await runStep(target, model, step, tally);
            for (const read of step.reads.map(resolveRead)) {
              if (!read.passes) readSoFar.set(read.key, read.read);
            }
            if (!step.readBack) continue;
            for (const read of readSoFar.values()) {
              await runStep(target, model, { reads: [read], write: null, readBack: false }, tally);
            }
          }
        } finally {
          await gateway.close();
        }
      }),
      { numRuns: RUNS_PER_VARIANT },
    );
  });
});
