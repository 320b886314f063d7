import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemoOrigin } from '../src/demo/origin.js';
import type { ProcessingRequest } from '../src/extproc/messages.js';
import { startRedisServer } from '../test/support/redis.js';
import { startChildServer, type ChildServer } from './childServer.js';
import { round, runBatch, runClosedLoop, runInterleaved } from './closedLoop.js';
import { EnvoyStreams, headerSet, type EnvoyStreamClose } from './extprocStreams.js';
import { HttpPoster } from './httpPoster.js';
import { USAGE, parseOptions, type BenchOptions } from './options.js';
import { summariseProfile } from './profileSummary.js';
import { RedisProbe } from './redisProbe.js';
import { formatTable, type BenchReport } from './report.js';
import { measureStampede } from './stampede.js';
import { Teardown } from './teardown.js';
import {
  GRAPHQL_PATH,
  HIT_QUERY,
  ORIGIN_RESPONSE_BODY,
  graphqlRequestBody,
  missQuery,
  originResponseBodyMessage,
  originResponseHeaders,
  postRequestHeaders,
  requestBodyMessage,
} from './workload.js';

/**
 * `npm run bench`: starts Redis, the demo origin, and in child processes of their own the sidecar,
 * two floor ext_proc servers and GraphQL Yoga; drives each as its clients would; prints a table,
 * or one JSON object with --json. Whatever happens, everything it started is stopped.
 */

/** Measured rounds of the HIT scenarios, after one unmeasured round (closedLoop.ts, runInterleaved). */
const HIT_ROUNDS = 3;
/** The HIT scenarios' Redis commands are counted over this many HITs. */
const ROUND_TRIP_BATCH = 2000;
/** A MISS's added latency is a property of one request, not of a queue behind busy CPUs. */
const MISS_CONCURRENCY = 1;
const STAMPEDE_REQUESTS = 100;
/** Past nghttp2's default burst of 1000 resets, so that its limit shows. */
const RESET_CLOSE_STREAMS = 3000;
/**
 * Bytes per entry are read with this many entries stored: past 128 members a tag index (one per
 * tag and shard) leaves Redis's compact listpack encoding for a skiplist, as in any cache of size,
 * and 16 shards times 128 is 2048.
 */
const STORAGE_ENTRIES = 4096;
/** Keys as src/store/redisLayout.ts names them under the default prefix: entries are {prefix}{shard}:e:{entryId}. */
const ALL_KEYS = 'svc-cache:*';
const ENTRY_KEYS = 'svc-cache:{*}:e:*';

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
    process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatTable(report));
    return 0;
  } catch (error) {
    if (interruption.signal.aborted) return 130;
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}

async function runBenchmark(options: BenchOptions): Promise<BenchReport> {
  const [loadAverageAtStart = NaN] = loadavg();
  progress('starting Redis, the demo origin and the servers');
  const redis = await startRedisServer();
  teardown.add('Redis', () => redis.stop());
  const origin = await startDemoOrigin({ port: 0 });
  teardown.add('demo origin', () => origin.close());
  const [sidecar, sidecarDashboardOff, floorHit, floorContinue, yoga] = await startChildren([
    ['sidecar', 'sidecar.ts', [redis.url, origin.url, 'on']],
    ['sidecar (dashboard off)', 'sidecar.ts', [redis.url, origin.url, 'off']],
    ['floor (hit)', 'floor.ts', ['hit']],
    ['floor (continue)', 'floor.ts', ['continue']],
    ['Yoga', 'yoga.ts', []],
  ]);
  const probe = new RedisProbe(redis.url);
  teardown.add('Redis probe', () => probe.close());
  const sidecarStreams = streamsTo(sidecar, options.envoyClose);
  const dashboardOffStreams = streamsTo(sidecarDashboardOff, options.envoyClose);
  const floorHitStreams = streamsTo(floorHit, options.envoyClose);
  const floorContinueStreams = streamsTo(floorContinue, options.envoyClose);
  const yogaPoster = new HttpPoster(`http://127.0.0.1:${yoga.port}${GRAPHQL_PATH}`, options.concurrency);
  teardown.add('HTTP client', () => yogaPoster.close());

  const hitBody = graphqlRequestBody(HIT_QUERY);
  await primeSidecar(sidecarStreams, hitBody);
  // Same Redis, same public key: the entry the first sidecar stored is this one's HIT too.
  await expectHit(dashboardOffStreams, hitBody);
  const loadPlan = (server: ChildServer, request: () => Promise<void>, concurrency = options.concurrency) => ({
    concurrency,
    warmupMs: options.warmupSeconds * 1000,
    durationMs: options.durationSeconds * 1000,
    request,
    serverCpuMicros: () => server.cpuMicros(),
    signal: interruption.signal,
  });
  const sidecarHitRequest = () => expectHit(sidecarStreams, hitBody);

  const profileFiles = { hit: profileFileFor('hit'), miss: profileFileFor('miss') };
  const profiled = (file: string) =>
    options.cpuProfile ? { window: { opened: () => sidecar.startProfile(), closing: () => sidecar.stopProfile(file) } } : {};
  const hits = await runInterleaved(
    {
      sidecar: { ...loadPlan(sidecar, sidecarHitRequest), ...profiled(profileFiles.hit) },
      dashboardOff: loadPlan(sidecarDashboardOff, () => expectHit(dashboardOffStreams, hitBody)),
      floor: loadPlan(floorHit, () => expectHit(floorHitStreams, hitBody)),
    },
    HIT_ROUNDS,
    (round) => progress(round === 0 ? 'HIT: sidecar, sidecar with the dashboard off, floor (unmeasured round)' : `HIT: round ${round} of ${HIT_ROUNDS}`),
  );
  const { sidecar: sidecarHit, dashboardOff: sidecarHitDashboardOff, floor: floorHitFigures } = hits;
  progress('Redis commands per HIT');
  const hitCommands = await probe.commandsDuring(async () => {
    const batch = await runBatch(ROUND_TRIP_BATCH, options.concurrency, sidecarHitRequest, interruption.signal);
    if (batch.failed > 0) throw new Error(`${batch.failed} of ${ROUND_TRIP_BATCH} HITs failed: ${batch.firstError}`);
  });
  progress('MISS: sidecar');
  let missSequence = 0;
  const sidecarMiss = await runClosedLoop({
    ...loadPlan(sidecar, () => expectMiss(sidecarStreams, (missSequence += 1)), MISS_CONCURRENCY),
    ...profiled(profileFiles.miss),
  });
  progress('pass-through: floor');
  const floorPassThrough = await runClosedLoop(
    loadPlan(floorContinue, () => expectPassThrough(floorContinueStreams, fullStreamMessages(hitBody)), MISS_CONCURRENCY),
  );
  progress(`bytes stored per entry, at ${STORAGE_ENTRIES} entries`);
  const missesToFill = STORAGE_ENTRIES - (await probe.keySizes(ENTRY_KEYS, 'string')).keys;
  const fill = await runBatch(missesToFill, options.concurrency, () => expectMiss(sidecarStreams, (missSequence += 1)), interruption.signal);
  if (fill.failed > 0) throw new Error(`${fill.failed} of ${missesToFill} MISSes failed: ${fill.firstError}`);
  const entries = await probe.keySizes(ENTRY_KEYS, 'string');
  const everything = await probe.keySizes(ALL_KEYS);
  progress('HIT: Yoga');
  await primeYoga(yogaPoster, hitBody);
  const yogaHit = await runClosedLoop(loadPlan(yoga, () => expectOk(yogaPoster, hitBody)));
  progress(`stampede: ${STAMPEDE_REQUESTS} identical MISSes through the gateway`);
  const stampede = await measureStampede(sidecar.port, origin, STAMPEDE_REQUESTS);
  progress(`${RESET_CLOSE_STREAMS} HITs closed as Envoy closes streams by default`);
  const resetClose = await measureResetClose(sidecar, hitBody, options.concurrency);
  const profiles = options.cpuProfile
    ? { sidecarHitProfile: await summariseProfile(profileFiles.hit), sidecarMissProfile: await summariseProfile(profileFiles.miss) }
    : {};

  return buildReport(options, {
    scenarios: { sidecarHit, sidecarHitDashboardOff, floorHit: floorHitFigures, yogaHit, sidecarMiss, floorPassThrough },
    redisRoundTripsPerHit: round(hitCommands / ROUND_TRIP_BATCH, 3),
    entries,
    everything,
    stampede,
    resetClose,
    profiles,
    loadAverageAtStart,
  });
}

function buildReport(
  options: BenchOptions,
  measured: Pick<BenchReport, 'scenarios' | 'redisRoundTripsPerHit' | 'stampede' | 'resetClose'> & {
    entries: { keys: number; memoryBytes: number; valueBytes: number };
    everything: { keys: number; memoryBytes: number };
    loadAverageAtStart: number;
    profiles: Pick<BenchReport, 'sidecarHitProfile' | 'sidecarMissProfile'>;
  },
): BenchReport {
  const { scenarios, entries, everything } = measured;
  const perEntry = (bytes: number): number => Math.round(bytes / entries.keys);
  const ratio = (numerator: number, denominator: number): number => round(numerator / denominator, 3);
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
    },
    hitThroughputRatio: ratio(scenarios.sidecarHit.streamsPerSecond, scenarios.floorHit.streamsPerSecond),
    cpuPerHitRatio: ratio(scenarios.sidecarHit.cpuMicrosPerRequest, scenarios.yogaHit.cpuMicrosPerRequest),
    hitCpuRatioToFloor: ratio(scenarios.sidecarHit.cpuMicrosPerRequest, scenarios.floorHit.cpuMicrosPerRequest),
    dashboardOnHitCpuRatio: ratio(scenarios.sidecarHit.cpuMicrosPerRequest, scenarios.sidecarHitDashboardOff.cpuMicrosPerRequest),
    redisRoundTripsPerHit: measured.redisRoundTripsPerHit,
    stampedeOriginRequests: measured.stampede.originRequests,
    missAddedLatencyMs: round(scenarios.sidecarMiss.p50Ms - scenarios.floorPassThrough.p50Ms, 3),
    storedBytesPerBodyByte: ratio(entries.memoryBytes / entries.keys, ORIGIN_RESPONSE_BODY.length),
    redisMemoryPerBodyByte: ratio(everything.memoryBytes / entries.keys, ORIGIN_RESPONSE_BODY.length),
    scenarios,
    storage: {
      entries: entries.keys,
      keys: everything.keys,
      entryKeyMemoryPerEntry: perEntry(entries.memoryBytes),
      entryValuePerEntry: perEntry(entries.valueBytes),
      allKeysMemoryPerEntry: perEntry(everything.memoryBytes),
      bodyBytes: ORIGIN_RESPONSE_BODY.length,
    },
    resetCloseFailedStreams: measured.resetClose.failedStreams,
    stampede: measured.stampede,
    resetClose: measured.resetClose,
    ...measured.profiles,
  };
}

/** Starts them side by side; each is registered for teardown as soon as it runs, even if another fails. */
async function startChildren<const Specs extends ReadonlyArray<readonly [name: string, script: string, args: readonly string[]]>>(
  specs: Specs,
): Promise<{ [Index in keyof Specs]: ChildServer }> {
  const started = await Promise.allSettled(
    specs.map(async ([name, script, args]) => {
      const child = await startChildServer(name, script, args);
      teardown.add(name, () => child.stop());
      return child;
    }),
  );
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return started.map((result) => (result as PromiseFulfilledResult<ChildServer>).value) as { [Index in keyof Specs]: ChildServer };
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

/** Stores the HIT query's answer through one MISS, then checks that it is served from the cache. */
async function primeSidecar(streams: EnvoyStreams, hitBody: Buffer): Promise<void> {
  const miss = await streams.play(fullStreamMessages(hitBody));
  if (headerSet(miss, 'svc-cache') !== 'MISS') {
    throw new Error(`the sidecar did not store the HIT query's answer: ${JSON.stringify(miss)}`);
  }
  await expectHit(streams, hitBody);
}

async function primeYoga(poster: HttpPoster, hitBody: Buffer): Promise<void> {
  const answer = await poster.post(hitBody);
  if (answer.status !== 200 || !answer.body.equals(ORIGIN_RESPONSE_BODY)) {
    throw new Error(`Yoga answered ${answer.status} with other bytes than the sidecar serves: ${answer.body.toString()}`);
  }
}

/** Envoy's POST flow on a HIT: request headers, then the body, answered with an immediate response. */
async function expectHit(streams: EnvoyStreams, hitBody: Buffer): Promise<void> {
  const answer = await streams.play([postRequestHeaders(hitBody), requestBodyMessage(hitBody)]);
  const status = headerSet(answer, 'svc-cache');
  if (answer.response !== 'immediate_response' || status !== 'HIT') {
    throw new Error(`expected an immediate response with svc-cache: HIT, got ${answer.response} (${status ?? 'no svc-cache'})`);
  }
}

/** A whole stream on a fresh key, the load generator answering as the origin: stored, so a MISS. */
async function expectMiss(streams: EnvoyStreams, sequence: number): Promise<void> {
  const { query, operationName } = missQuery(sequence);
  const answer = await streams.play(fullStreamMessages(graphqlRequestBody(query, operationName)));
  const status = headerSet(answer, 'svc-cache');
  if (answer.response !== 'response_body' || status !== 'MISS') {
    throw new Error(`expected the response body answered with svc-cache: MISS, got ${answer.response} (${status ?? 'no svc-cache'})`);
  }
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
function fullStreamMessages(requestBody: Buffer): ProcessingRequest[] {
  return [
    postRequestHeaders(requestBody),
    requestBodyMessage(requestBody),
    originResponseHeaders(ORIGIN_RESPONSE_BODY),
    originResponseBodyMessage(ORIGIN_RESPONSE_BODY),
  ];
}

function progress(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}
