import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { startDemoOrigin } from '../src/demo/origin.js';
import type { ProcessingRequest } from '../src/extproc/messages.js';
import { startRedisServer } from '../test/support/redis.js';
import { startChildServer, type ChildServer } from './childServer.js';
import { medianRunBy, round, runBatch, runClosedLoop, runInterleaved, type LoadFigures } from './closedLoop.js';
import { EnvoyStreams, headerSet, type EnvoyStreamClose } from './extprocStreams.js';
import { HttpPoster } from './httpPoster.js';
import { USAGE, parseOptions, type BenchOptions, type ScenarioGroup } from './options.js';
import { summariseProfile } from './profileSummary.js';
import { grpcFrame } from './grpcFrame.js';
import { runOpenLoop, type OpenLoopFigures } from './openLoop.js';
import { measurePurgeAck, type PurgeAckFigures } from './purgeAck.js';
import { RedisProbe } from './redisProbe.js';
import { formatTable, type BenchReport } from './report.js';
import { h2loadMissing, measureFixedRateWithH2load, measureServerThroughput, type ServerThroughputFigures, type ServerThroughputPlan } from './serverThroughput.js';
import { measureStampede, type StampedeFigures } from './stampede.js';
import { Teardown } from './teardown.js';
import {
  BENCH_JWT_SECRET,
  GRAPHQL_PATH,
  HIT_QUERY,
  ORIGIN_RESPONSE_BODY,
  getRequestHeaders,
  graphqlRequestBody,
  missQuery,
  originResponseBodyMessage,
  originResponseHeaders,
  postRequestHeaders,
  requestBodyMessage,
  type BenchClient,
} from './workload.js';

/**
 * `npm run bench`: starts Redis, the demo origin, and in child processes of their own the sidecar,
 * two floor ext_proc servers and GraphQL Yoga; drives each as its clients would; prints a table,
 * or one JSON object on one line with --json. Whatever happens, everything it started is stopped.
 */

/** Measured rounds of the HIT scenarios, after one unmeasured round (closedLoop.ts, runInterleaved). */
const HIT_ROUNDS = 3;
/** The HIT scenarios' Redis commands are counted over this many HITs. */
const ROUND_TRIP_BATCH = 2000;
/** A MISS's added latency is a property of one request, not of a queue behind busy CPUs. */
const MISS_CONCURRENCY = 1;
const STAMPEDE_REQUESTS = 100;
/** h2load's and the fixed-rate client's connections, and streams in flight on each (Envoy-like fan-in). */
const H2LOAD_CONNECTIONS = 4;
const H2LOAD_STREAMS_PER_CONNECTION = 32;
/** Rounds of the h2load scenarios, each sidecar then floor; each server reports its median round. */
const H2LOAD_ROUNDS = 3;
/** The fixed-rate scenario runs at this share of the floor's h2load throughput. */
const FIXED_RATE_SHARE_OF_FLOOR = 0.5;
/** Past nghttp2's default burst of 1000 resets, so that its limit shows. */
const RESET_CLOSE_STREAMS = 3000;
/**
 * Bytes per entry are read with this many entries stored: past 128 members a tag index (one per
 * tag and shard) leaves Redis's compact listpack encoding for a skiplist, as in any cache of size,
 * and 16 shards times 128 is 2048.
 */
const STORAGE_ENTRIES = 4096;
const FILL_BATCH = 256;
/** The sidecar children's redis.keyPrefix: the default. */
const SIDECAR_KEY_PREFIX = 'svc-cache:';
/** Keys as src/store/redisLayout.ts names them under that prefix: entries are {prefix}{shard}:e:{entryId}. */
const ALL_KEYS = `${SIDECAR_KEY_PREFIX}*`;
const ENTRY_KEYS = `${SIDECAR_KEY_PREFIX}{*}:e:*`;

const teardown = new Teardown();
const interruption = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interruption.abort();
    progress(`${signal}: stopping everything the run started`);
    void teardown.run().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}
process.exitCode = await main(process.argv.slice(2));
await teardown.run();
process.exit();

async function main(argv: readonly string[]): Promise<number> {
  let options: BenchOptions | 'help';
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    const report = await runBenchmark(options);
    process.stdout.write(options.json ? `${JSON.stringify(report)}\n` : formatTable(report));
    return 0;
  } catch (error) {
    if (interruption.signal.aborted) return 130;
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

async function runBenchmark(options: BenchOptions): Promise<BenchReport> {
  const [loadAverageAtStart = NaN] = loadavg();
  const wanted = (...groups: ScenarioGroup[]): boolean => groups.some((group) => options.only.has(group));
  progress('starting Redis, the demo origin and the servers');
  const redis = await startRedisServer();
  teardown.add('Redis', () => redis.stop());
  const origin = await startDemoOrigin({ port: 0 });
  teardown.add('demo origin', () => origin.close());
  const [sidecar, sidecarDashboardOff, floorHit, floorContinue, yoga] = await startChildren([
    ['sidecar', 'sidecar.ts', [redis.url, origin.url, 'on'], true],
    ['sidecar (dashboard off)', 'sidecar.ts', [redis.url, origin.url, 'off'], wanted('hit')],
    ['floor (hit)', 'floor.ts', ['hit'], wanted('hit', 'get-throughput', 'fixed-rate')],
    ['floor (continue)', 'floor.ts', ['continue'], wanted('miss')],
    ['Yoga', 'yoga.ts', [], wanted('yoga')],
  ]);
  // Started after the others, so that eight children do not contend for the CPUs at once.
  // The identity client's HITs get a sidecar of their own: a scenario measured on a process right
  // after another one's load cost 5-10% less CPU than the same scenario measured first (README,
  // Performance), so every HIT scenario is its process's only one.
  const [sidecarHeaderScope, sidecarJwtScope, sidecarIdentityClient] = await startChildren([
    ['sidecar (header scope)', 'sidecar.ts', [redis.url, origin.url, 'on', 'header'], wanted('hit', 'miss')],
    ['sidecar (JWT scope)', 'sidecar.ts', [redis.url, origin.url, 'on', 'jwt'], wanted('hit')],
    ['sidecar (identity client)', 'sidecar.ts', [redis.url, origin.url, 'on'], wanted('hit')],
  ]);
  const probe = new RedisProbe(redis.url);
  teardown.add('Redis probe', () => probe.close());
  const sidecarStreams = streamsTo(sidecar!, options.envoyClose);

  const hitBody = graphqlRequestBody(HIT_QUERY);
  await primeSidecar(sidecarStreams, hitBody);
  const loadPlan = (server: ChildServer, request: () => Promise<void>, concurrency = options.concurrency) => ({
    concurrency,
    warmupMs: options.warmupSeconds * 1000,
    durationMs: options.durationSeconds * 1000,
    request,
    serverCpuMicros: () => server.cpuMicros(),
    collectGarbage: () => server.collectGarbage(),
    signal: interruption.signal,
  });
  const sidecarHitRequest = () => expectHit(sidecarStreams, hitBody);
  const profileFiles = { hit: profileFileFor('hit'), miss: profileFileFor('miss'), getHit: profileFileFor('get-hit') };
  const profiled = (file: string) =>
    options.cpuProfile ? { window: { opened: () => sidecar!.startProfile(), closing: () => sidecar!.stopProfile(file) } } : {};
  const scenarios: BenchReport['scenarios'] = {};
  let redisRoundTripsPerHit: number | undefined;

  if (wanted('hit')) {
    const dashboardOffStreams = streamsTo(sidecarDashboardOff!, options.envoyClose);
    const identityClientStreams = streamsTo(sidecarIdentityClient!, options.envoyClose);
    const headerScopeStreams = streamsTo(sidecarHeaderScope!, options.envoyClose);
    const jwtScopeStreams = streamsTo(sidecarJwtScope!, options.envoyClose);
    const floorHitStreams = streamsTo(floorHit!, options.envoyClose);
    // Same Redis, same public key: the entry the first sidecar stored is this one's HIT too.
    await expectHit(dashboardOffStreams, hitBody);
    await expectHit(identityClientStreams, hitBody, [], 'identity');
    // One user's HITs in a scope: keyed on a header's value, or on the sub of a JWT verified once.
    const headerScope = [['x-team', 'team-1']] as const;
    const jwtScope = [['authorization', `Bearer ${await benchToken()}`]] as const;
    await primeSidecar(headerScopeStreams, hitBody, headerScope);
    await primeSidecar(jwtScopeStreams, hitBody, jwtScope);
    const hits = await runInterleaved(
      {
        sidecar: { ...loadPlan(sidecar!, sidecarHitRequest), ...profiled(profileFiles.hit) },
        identityClient: loadPlan(sidecarIdentityClient!, () => expectHit(identityClientStreams, hitBody, [], 'identity')),
        dashboardOff: loadPlan(sidecarDashboardOff!, () => expectHit(dashboardOffStreams, hitBody)),
        headerScope: loadPlan(sidecarHeaderScope!, () => expectHit(headerScopeStreams, hitBody, headerScope)),
        jwtScope: loadPlan(sidecarJwtScope!, () => expectHit(jwtScopeStreams, hitBody, jwtScope)),
        floor: loadPlan(floorHit!, () => expectHit(floorHitStreams, hitBody)),
      },
      HIT_ROUNDS,
      (round) => progress(round === 0 ? 'HIT: every HIT scenario once, unmeasured' : `HIT: round ${round} of ${HIT_ROUNDS}`),
    );
    scenarios.sidecarHit = hits.sidecar;
    scenarios.sidecarHitIdentityClient = hits.identityClient;
    scenarios.sidecarHitDashboardOff = hits.dashboardOff;
    scenarios.sidecarHitHeaderScope = hits.headerScope;
    scenarios.sidecarHitJwtScope = hits.jwtScope;
    scenarios.floorHit = hits.floor;
    progress('Redis commands per HIT');
    const hitCommands = await probe.commandsDuring(async () => {
      const batch = await runBatch(ROUND_TRIP_BATCH, options.concurrency, sidecarHitRequest, interruption.signal);
      if (batch.failed > 0) throw new Error(`${batch.failed} of ${ROUND_TRIP_BATCH} HITs failed: ${batch.firstError}`);
    });
    redisRoundTripsPerHit = round(hitCommands / ROUND_TRIP_BATCH, 3);
  }
  let missSequence = 0;
  if (wanted('miss')) {
    const floorContinueStreams = streamsTo(floorContinue!, options.envoyClose);
    progress('MISS: sidecar');
    scenarios.sidecarMiss = await runClosedLoop({
      ...loadPlan(sidecar!, () => expectMiss(sidecarStreams, missMessages((missSequence += 1))), MISS_CONCURRENCY),
      ...profiled(profileFiles.miss),
    });
    progress('MISS: sidecar, a known document under a new scope value each time');
    const knownDocumentStreams = streamsTo(sidecarHeaderScope!, options.envoyClose);
    scenarios.sidecarMissKnownDocument = await runClosedLoop(
      loadPlan(sidecarHeaderScope!, () => expectMiss(knownDocumentStreams, knownDocumentMissMessages(hitBody, (missSequence += 1))), MISS_CONCURRENCY),
    );
    progress('pass-through: floor');
    scenarios.floorPassThrough = await runClosedLoop(
      loadPlan(floorContinue!, () => expectPassThrough(floorContinueStreams, fullStreamMessages(hitBody)), MISS_CONCURRENCY),
    );
  }
  let storage: StorageFigures | undefined;
  if (wanted('storage')) storage = await fillStore(probe, options.concurrency, () => expectMiss(sidecarStreams, missMessages((missSequence += 1))));
  if (wanted('yoga')) {
    progress('HIT: Yoga');
    const yogaPoster = new HttpPoster(`http://127.0.0.1:${yoga!.port}${GRAPHQL_PATH}`, options.concurrency);
    teardown.add('HTTP client', () => yogaPoster.close());
    await primeYoga(yogaPoster, hitBody);
    scenarios.yogaHit = await runClosedLoop(loadPlan(yoga!, () => expectOk(yogaPoster, hitBody)));
  }
  let stampede: StampedeFigures | undefined;
  if (wanted('stampede')) {
    progress(`stampede: ${STAMPEDE_REQUESTS} identical MISSes through the gateway`);
    stampede = await measureStampede(sidecar!.port, origin, STAMPEDE_REQUESTS);
  }
  let resetClose: BenchReport['resetClose'];
  if (wanted('reset-close')) {
    progress(`${RESET_CLOSE_STREAMS} HITs closed as Envoy closes streams by default`);
    resetClose = await measureResetClose(sidecar!, hitBody, options.concurrency);
  }
  const getHitFrame = wanted('get-throughput', 'fixed-rate') ? await primeGetHit(sidecarStreams) : undefined;
  const h2loadMissing = getHitFrame && (await whyNoH2load());
  let serverThroughput: BenchReport['serverThroughput'];
  if (wanted('get-throughput') && getHitFrame) {
    serverThroughput =
      h2loadMissing === undefined
        ? await measureGetHitThroughput(options, sidecar!, floorHit!, getHitFrame, profiled(profileFiles.getHit))
        : { skipped: h2loadMissing };
  }
  let fixedRate: BenchReport['fixedRate'];
  if (wanted('fixed-rate') && getHitFrame) {
    fixedRate = h2loadMissing === undefined || options.fixedRate !== undefined ? await measureFixedRate(options, sidecar!, floorHit!, getHitFrame, serverThroughput) : { skipped: h2loadMissing };
  }
  let purgeAck: PurgeAckFigures | undefined;
  if (wanted('purge-ack')) {
    progress('purge latency, with and without the local caches acknowledging it');
    purgeAck = await measurePurgeAck(redis.url, SIDECAR_KEY_PREFIX, interruption.signal);
  }
  const profiles = options.cpuProfile
    ? {
        ...(scenarios.sidecarHit && { sidecarHitProfile: await summariseProfile(profileFiles.hit) }),
        ...(scenarios.sidecarMiss && { sidecarMissProfile: await summariseProfile(profileFiles.miss) }),
        ...(serverThroughput && 'sidecar' in serverThroughput && { sidecarGetHitProfile: await summariseProfile(profileFiles.getHit) }),
      }
    : {};

  return buildReport(options, { scenarios, redisRoundTripsPerHit, storage, stampede, resetClose, serverThroughput, fixedRate, purgeAck, profiles, loadAverageAtStart });
}

interface StorageFigures {
  entries: { keys: number; memoryBytes: number; valueBytes: number };
  everything: { keys: number; memoryBytes: number };
}

/** MISSes until STORAGE_ENTRIES entries are stored, then the sizes of the entry keys and of every key. */
async function fillStore(probe: RedisProbe, concurrency: number, miss: () => Promise<void>) {
  progress(`bytes stored per entry, at ${STORAGE_ENTRIES} entries`);
  // In batches, each within the batch timeout even on a busy machine.
  for (let missesToFill = STORAGE_ENTRIES - (await probe.keySizes(ENTRY_KEYS, 'string')).keys; missesToFill > 0; missesToFill -= FILL_BATCH) {
    const fill = await runBatch(Math.min(FILL_BATCH, missesToFill), concurrency, miss, interruption.signal);
    if (fill.failed > 0) throw new Error(`${fill.failed} MISSes failed while filling the store: ${fill.firstError}`);
  }
  return { entries: await probe.keySizes(ENTRY_KEYS, 'string'), everything: await probe.keySizes(ALL_KEYS) };
}

function buildReport(
  options: BenchOptions,
  measured: Pick<BenchReport, 'scenarios' | 'resetClose' | 'serverThroughput' | 'fixedRate' | 'purgeAck'> & {
    redisRoundTripsPerHit: number | undefined;
    storage: StorageFigures | undefined;
    stampede: StampedeFigures | undefined;
    loadAverageAtStart: number;
    profiles: Pick<BenchReport, 'sidecarHitProfile' | 'sidecarMissProfile' | 'sidecarGetHitProfile'>;
  },
): BenchReport {
  const { scenarios, storage, stampede, resetClose, serverThroughput, fixedRate } = measured;
  const ratio = (numerator: number | undefined, denominator: number | undefined): number | null =>
    numerator === undefined || denominator === undefined ? null : round(numerator / denominator, 3);
  const perEntry = (bytes: number, entries: number): number => Math.round(bytes / entries);
  const addedP50Ms = (miss: LoadFigures | undefined, pass: LoadFigures | undefined): number | null =>
    miss && pass ? round(miss.p50Ms - pass.p50Ms, 3) : null;
  const throughput = serverThroughput && 'sidecar' in serverThroughput ? serverThroughput : undefined;
  const latency = fixedRate && 'sidecar' in fixedRate ? fixedRate : undefined;
  return {
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      nodeVersion: process.version,
      platform: `${process.platform} ${process.arch}`,
      loadAverageAtStart: round(measured.loadAverageAtStart, 2),
    },
    settings: {
      durationSeconds: options.durationSeconds,
      warmupSeconds: options.warmupSeconds,
      concurrency: options.concurrency,
      missConcurrency: MISS_CONCURRENCY,
      envoyClose: options.envoyClose,
      bodyBytes: ORIGIN_RESPONSE_BODY.length,
      scenarioGroups: [...options.only],
    },
    hitThroughputRatio: ratio(scenarios.sidecarHit?.streamsPerSecond, scenarios.floorHit?.streamsPerSecond),
    cpuPerHitRatio: ratio(scenarios.sidecarHit?.cpuMicrosPerRequest, scenarios.yogaHit?.cpuMicrosPerRequest),
    hitCpuRatioToFloor: ratio(scenarios.sidecarHit?.cpuMicrosPerRequest, scenarios.floorHit?.cpuMicrosPerRequest),
    hitCpuIdentityClientMicros: scenarios.sidecarHitIdentityClient?.cpuMicrosPerRequest ?? null,
    dashboardOnHitCpuRatio: ratio(scenarios.sidecarHit?.cpuMicrosPerRequest, scenarios.sidecarHitDashboardOff?.cpuMicrosPerRequest),
    hitCpuHeaderScopeMicros: scenarios.sidecarHitHeaderScope?.cpuMicrosPerRequest ?? null,
    hitCpuJwtScopeMicros: scenarios.sidecarHitJwtScope?.cpuMicrosPerRequest ?? null,
    jwtScopeHitCpuRatio: ratio(scenarios.sidecarHitJwtScope?.cpuMicrosPerRequest, scenarios.sidecarHitHeaderScope?.cpuMicrosPerRequest),
    redisRoundTripsPerHit: measured.redisRoundTripsPerHit ?? null,
    stampedeOriginRequests: stampede?.originRequests ?? null,
    missAddedLatencyMs: addedP50Ms(scenarios.sidecarMiss, scenarios.floorPassThrough),
    missKnownDocumentAddedLatencyMs: addedP50Ms(scenarios.sidecarMissKnownDocument, scenarios.floorPassThrough),
    storedBytesPerBodyByte: storage ? ratio(storage.entries.memoryBytes / storage.entries.keys, ORIGIN_RESPONSE_BODY.length) : null,
    redisMemoryPerBodyByte: storage ? ratio(storage.everything.memoryBytes / storage.entries.keys, ORIGIN_RESPONSE_BODY.length) : null,
    getHitsPerSecondPerCore: throughput?.sidecar.requestsPerSecondPerCore ?? null,
    getHitServerThroughputRatio: ratio(throughput?.sidecar.requestsPerSecondPerCore, throughput?.floor.requestsPerSecondPerCore),
    hitAddedP99Ms: latency ? round(latency.sidecar.p99Ms - latency.floor.p99Ms, 3) : null,
    purgeAckLatencyMs: measured.purgeAck?.withLocalCacheP50Ms ?? null,
    scenarios,
    storage: storage
      ? {
          entries: storage.entries.keys,
          keys: storage.everything.keys,
          entryKeyMemoryPerEntry: perEntry(storage.entries.memoryBytes, storage.entries.keys),
          entryValuePerEntry: perEntry(storage.entries.valueBytes, storage.entries.keys),
          allKeysMemoryPerEntry: perEntry(storage.everything.memoryBytes, storage.entries.keys),
          bodyBytes: ORIGIN_RESPONSE_BODY.length,
        }
      : undefined,
    resetCloseFailedStreams: resetClose?.failedStreams ?? null,
    stampede,
    resetClose,
    serverThroughput,
    fixedRate,
    purgeAck: measured.purgeAck,
    ...measured.profiles,
  };
}

/**
 * Starts the enabled ones side by side (the others stay undefined); each is registered for teardown
 * as soon as it runs, even if another fails.
 */
async function startChildren<const Specs extends ReadonlyArray<readonly [name: string, script: string, args: readonly string[], enabled: boolean]>>(
  specs: Specs,
): Promise<{ [Index in keyof Specs]: ChildServer | undefined }> {
  const started = await Promise.allSettled(
    specs.map(async ([name, script, args, enabled]) => {
      if (!enabled) return undefined;
      const child = await startChildServer(name, script, args);
      teardown.add(name, () => child.stop());
      return child;
    }),
  );
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return started.map((result) => (result as PromiseFulfilledResult<ChildServer | undefined>).value) as {
    [Index in keyof Specs]: ChildServer | undefined;
  };
}

/**
 * GET HITs at the rate the server allows, from h2load: the sidecar's and the floor's HITs per
 * second per core of their own CPU. The entry is checked to still be a HIT after the sidecar's run.
 */
async function measureGetHitThroughput(
  options: BenchOptions,
  sidecar: ChildServer,
  floor: ChildServer,
  frame: Buffer,
  sidecarProfile: Pick<ServerThroughputPlan, 'window'>,
): Promise<NonNullable<BenchReport['serverThroughput']>> {
  const plan = { frame, requests: options.h2loadRequests, connections: H2LOAD_CONNECTIONS, streamsPerConnection: H2LOAD_STREAMS_PER_CONNECTION };
  const measured = { sidecar: [] as ServerThroughputFigures[], floor: [] as ServerThroughputFigures[] };
  // In turns, median of the rounds, as the HIT scenarios (runInterleaved): one run of each server
  // depends on where its garbage collector stands, measured at ±20% between runs.
  for (let roundNumber = 1; roundNumber <= H2LOAD_ROUNDS; roundNumber += 1) {
    progress(`GET HIT throughput, round ${roundNumber} of ${H2LOAD_ROUNDS}: sidecar, h2load, ${plan.requests} streams on ${plan.connections} connections x ${plan.streamsPerConnection}`);
    measured.sidecar.push(await measureServerThroughput(sidecar, plan));
    await expectGetHit(sidecar.port, frame);
    progress(`GET HIT throughput, round ${roundNumber} of ${H2LOAD_ROUNDS}: floor, h2load`);
    measured.floor.push(await measureServerThroughput(floor, plan));
  }
  if (sidecarProfile.window) {
    // A round of its own, not counted: the profiler's overhead would be in its CPU time.
    progress('GET HIT throughput: sidecar, h2load, profiled (not counted)');
    await measureServerThroughput(sidecar, { ...plan, ...sidecarProfile });
  }
  return {
    tool: 'h2load',
    connections: plan.connections,
    streamsPerConnection: plan.streamsPerConnection,
    rounds: H2LOAD_ROUNDS,
    sidecar: medianRunBy(measured.sidecar, byCpu),
    floor: medianRunBy(measured.floor, byCpu),
  };
}

/**
 * GET HITs at a fixed rate, `--fixed-rate` or else half of what the floor served under h2load
 * (measured here if the throughput scenario did not run), started on h2load's schedule whether or
 * not earlier ones were answered: latency of the sidecar and the floor at the same rate.
 */
async function measureFixedRate(
  options: BenchOptions,
  sidecar: ChildServer,
  floor: ChildServer,
  frame: Buffer,
  throughput: BenchReport['serverThroughput'],
): Promise<NonNullable<BenchReport['fixedRate']>> {
  const floorCapacity =
    throughput && 'floor' in throughput
      ? throughput.floor.requestsPerSecond
      : options.fixedRate === undefined
        ? (
            await measureServerThroughput(floor, {
              frame,
              requests: options.h2loadRequests,
              connections: H2LOAD_CONNECTIONS,
              streamsPerConnection: H2LOAD_STREAMS_PER_CONNECTION,
            })
          ).requestsPerSecond
        : undefined;
  const ratePerSecond = options.fixedRate ?? Math.max(1, Math.round(floorCapacity! * FIXED_RATE_SHARE_OF_FLOOR));
  const plan = { frame, ratePerSecond, connections: H2LOAD_CONNECTIONS, warmupSeconds: options.warmupSeconds, durationSeconds: options.durationSeconds };
  const measured = { sidecar: [] as OpenLoopFigures[], floor: [] as OpenLoopFigures[] };
  // In turns, median p99 of the rounds: one run's p99 is one stall of the machine or of either
  // process (a floor run measured 167 ms at p99 beside the sidecar's 11).
  for (let roundNumber = 1; roundNumber <= H2LOAD_ROUNDS; roundNumber += 1) {
    progress(`GET HITs at a fixed ${ratePerSecond}/s (the floor's h2load throughput: ${floorCapacity ?? 'not measured'}/s), round ${roundNumber} of ${H2LOAD_ROUNDS}: sidecar`);
    measured.sidecar.push(await measureFixedRateWithH2load(sidecar, plan));
    progress(`GET HITs at a fixed ${ratePerSecond}/s, round ${roundNumber} of ${H2LOAD_ROUNDS}: floor`);
    measured.floor.push(await measureFixedRateWithH2load(floor, plan));
  }
  return { floorCapacityPerSecond: floorCapacity ?? null, rounds: H2LOAD_ROUNDS, sidecar: medianP99Run(measured.sidecar), floor: medianP99Run(measured.floor) };
}

function byCpu(run: ServerThroughputFigures): number {
  return run.cpuMicrosPerRequest;
}

/** The run of median p99, with the errors of every round: a failed or slipped round is not hidden by the median. */
function medianP99Run(runs: readonly OpenLoopFigures[]): OpenLoopFigures {
  const median = medianRunBy(runs, (run) => run.p99Ms);
  const errors = runs.reduce((sum, run) => sum + run.errors, 0);
  const firstError = runs.find((run) => run.firstError !== undefined)?.firstError;
  return { ...median, errors, ...(firstError === undefined ? {} : { firstError }) };
}

/** Why the h2load scenarios are skipped, printed once; undefined when h2load runs. */
async function whyNoH2load(): Promise<string | undefined> {
  const reason = await h2loadMissing();
  if (reason !== undefined) progress(`skipping the GET HIT throughput and fixed-rate scenarios: ${reason}`);
  return reason;
}

/**
 * Stores the HIT query's answer for a GET (unless the POST's entry already serves it) and checks
 * that a GET is then answered on its request headers alone; resolves to that one message as a frame.
 */
async function primeGetHit(streams: EnvoyStreams): Promise<Buffer> {
  const first = await streams.play([getRequestHeaders(HIT_QUERY), originResponseHeaders(ORIGIN_RESPONSE_BODY), originResponseBodyMessage(ORIGIN_RESPONSE_BODY)]);
  const status = headerSet(first, 'svc-cache');
  if (status !== 'MISS' && status !== 'HIT') throw new Error(`the sidecar neither stored nor served the GET: ${JSON.stringify(first)}`);
  const answer = await streams.play([getRequestHeaders(HIT_QUERY)]);
  if (answer.response !== 'immediate_response' || headerSet(answer, 'svc-cache') !== 'HIT') {
    throw new Error(`a GET was not answered on its headers: ${JSON.stringify(answer)}`);
  }
  return grpcFrame(getRequestHeaders(HIT_QUERY));
}

/** The prebuilt GET frame, sent once as h2load sends it, must come back as an immediate response with svc-cache: HIT. */
async function expectGetHit(port: number, frame: Buffer): Promise<void> {
  const figures = await runOpenLoop({
    port,
    frame,
    ratePerSecond: 1000,
    connections: 1,
    warmupMs: 0,
    durationMs: 1,
    answered: (responseBytes) => responseBytes > ORIGIN_RESPONSE_BODY.length,
    signal: interruption.signal,
  });
  if (figures.errors > 0) throw new Error(`the GET frame was not answered with a HIT: ${figures.firstError}`);
}

function profileFileFor(scenario: string): string {
  return join(tmpdir(), `svc-cache-bench-${scenario}-${Date.now()}.cpuprofile`);
}

function streamsTo(server: ChildServer, closing: EnvoyStreamClose): EnvoyStreams {
  const streams = new EnvoyStreams(server.port, closing);
  teardown.add(`ext_proc client of ${server.name}`, () => streams.close());
  return streams;
}

/**
 * HITs on a connection of their own, each stream closed with half-close and RST_STREAM as Envoy
 * does by default. Node's HTTP/2 server (nghttp2) counts the resets against its rapid-reset
 * allowance and, once it is spent, closes the connection: the streams then in flight fail, and
 * Envoy, failing open, sends those requests to the origin.
 */
async function measureResetClose(sidecar: ChildServer, hitBody: Buffer, concurrency: number): Promise<BenchReport['resetClose']> {
  const streams = new EnvoyStreams(sidecar.port, 'reset');
  try {
    const batch = await runBatch(RESET_CLOSE_STREAMS, concurrency, () => expectHit(streams, hitBody), interruption.signal);
    return { streams: RESET_CLOSE_STREAMS, failedStreams: batch.failed, ...(batch.firstError === undefined ? {} : { firstError: batch.firstError }) };
  } finally {
    streams.close();
  }
}

/**
 * Stores the HIT query's answer through one MISS, then checks that it is served from the cache:
 * gzip to a decoding client, identity to the other.
 */
async function primeSidecar(streams: EnvoyStreams, hitBody: Buffer, headers: RequestHeaders = []): Promise<void> {
  const miss = await streams.play(fullStreamMessages(hitBody, headers));
  if (headerSet(miss, 'svc-cache') !== 'MISS') {
    throw new Error(`the sidecar did not store the HIT query's answer: ${JSON.stringify(miss)}`);
  }
  for (const [client, encoding] of [['decoding', 'gzip'], ['identity', undefined]] as const) {
    const hit = await streams.play([postRequestHeaders(hitBody, headers, client), requestBodyMessage(hitBody)]);
    if (headerSet(hit, 'svc-cache') !== 'HIT' || headerSet(hit, 'content-encoding') !== encoding) {
      throw new Error(`expected a HIT with content-encoding ${encoding ?? 'none'} for a ${client} client: ${JSON.stringify(hit)}`);
    }
  }
}

type RequestHeaders = ReadonlyArray<readonly [string, string]>;

/** A day-long HS256 token of one user, as an identity provider hands out. */
function benchToken(): Promise<string> {
  return new SignJWT({ sub: 'bench-user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1d').sign(new TextEncoder().encode(BENCH_JWT_SECRET));
}

async function primeYoga(poster: HttpPoster, hitBody: Buffer): Promise<void> {
  const answer = await poster.post(hitBody);
  if (answer.status !== 200 || !answer.body.equals(ORIGIN_RESPONSE_BODY)) {
    throw new Error(`Yoga answered ${answer.status} with other bytes than the sidecar serves: ${answer.body.toString()}`);
  }
}

/** Envoy's POST flow on a HIT: request headers, then the body, answered with an immediate response. */
async function expectHit(streams: EnvoyStreams, hitBody: Buffer, headers: RequestHeaders = [], client: BenchClient = 'decoding'): Promise<void> {
  const answer = await streams.play([postRequestHeaders(hitBody, headers, client), requestBodyMessage(hitBody)]);
  const status = headerSet(answer, 'svc-cache');
  if (answer.response !== 'immediate_response' || status !== 'HIT') {
    throw new Error(`expected an immediate response with svc-cache: HIT, got ${answer.response} (${status ?? 'no svc-cache'})`);
  }
}

/** A whole stream on a fresh key, the load generator answering as the origin: stored, so a MISS. */
async function expectMiss(streams: EnvoyStreams, messages: readonly ProcessingRequest[]): Promise<void> {
  const answer = await streams.play(messages);
  const status = headerSet(answer, 'svc-cache');
  if (answer.response !== 'response_body' || status !== 'MISS') {
    throw new Error(`expected the response body answered with svc-cache: MISS, got ${answer.response} (${status ?? 'no svc-cache'})`);
  }
}

/** The n-th MISS of the sidecar: a document it has not seen (a fresh operation name). */
function missMessages(sequence: number): ProcessingRequest[] {
  const { query, operationName } = missQuery(sequence);
  return fullStreamMessages(graphqlRequestBody(query, operationName));
}

/**
 * The n-th MISS of a document the header-scope sidecar knows (the HIT query): a fresh `x-team`
 * value makes a fresh key, as a MISS of a popular query by a new user or tenant has.
 */
function knownDocumentMissMessages(hitBody: Buffer, sequence: number): ProcessingRequest[] {
  return fullStreamMessages(hitBody, [['x-team', `miss-team-${sequence}`]]);
}

async function expectPassThrough(streams: EnvoyStreams, messages: readonly ProcessingRequest[]): Promise<void> {
  const answer = await streams.play(messages);
  if (answer.response !== 'response_body') throw new Error(`expected the response body answered, got ${answer.response}`);
}

async function expectOk(poster: HttpPoster, body: Buffer): Promise<void> {
  const answer = await poster.post(body);
  if (answer.status !== 200) throw new Error(`HTTP ${answer.status}: ${answer.body.toString().slice(0, 200)}`);
}

/** Every message of a forwarded POST: request headers and body, then the origin's headers and body. */
function fullStreamMessages(requestBody: Buffer, headers: RequestHeaders = []): ProcessingRequest[] {
  return [
    postRequestHeaders(requestBody, headers),
    requestBodyMessage(requestBody),
    originResponseHeaders(ORIGIN_RESPONSE_BODY),
    originResponseBodyMessage(ORIGIN_RESPONSE_BODY),
  ];
}

function progress(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}
