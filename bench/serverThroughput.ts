import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ChildServer } from './childServer.js';
import { percentile, round } from './closedLoop.js';
import type { OpenLoopFigures } from './openLoop.js';
import { GRPC_REQUEST_HEADERS } from './grpcFrame.js';

/**
 * Server-bound throughput: h2load (nghttp2's load generator, in C) sends one prebuilt ext_proc
 * message per stream over h2c, a GET's request headers that the server answers with an immediate
 * response, so the Node server and not the load generator is what runs out of CPU. The server's own
 * CPU time over the run turns its rate into HITs per second per core, comparable across machines
 * and loads more than the raw rate is.
 */

export interface ServerThroughputPlan {
  /** The length-prefixed gRPC message every stream sends (see grpcFrame.ts). */
  frame: Buffer;
  requests: number;
  connections: number;
  streamsPerConnection: number;
  /** Called around the measured run, e.g. to CPU-profile exactly that stretch. */
  window?: { opened(): Promise<void>; closing(): Promise<void> };
}

export interface ServerThroughputFigures {
  requests: number;
  succeeded: number;
  seconds: number;
  requestsPerSecond: number;
  /** The server's CPU time (user + system, every thread) over the run, in seconds. */
  serverCpuSeconds: number;
  /** Server CPU seconds per wall-clock second: how many cores it kept busy. */
  coresUsed: number;
  requestsPerSecondPerCore: number;
  cpuMicrosPerRequest: number;
}

/** Why h2load cannot run here, or undefined when it can. */
export async function h2loadMissing(): Promise<string | undefined> {
  try {
    await run(['--version']);
    return undefined;
  } catch (error) {
    return `h2load (Debian package nghttp2-client) did not run: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
  }
}

/** A short unmeasured run to warm the server's JIT and connections, then the measured one. */
export async function measureServerThroughput(server: ChildServer, plan: ServerThroughputPlan): Promise<ServerThroughputFigures> {
  return inScratchDirectory((directory) => measureThroughputWithFrameIn(directory, server, plan));
}

async function measureThroughputWithFrameIn(directory: string, server: ChildServer, plan: ServerThroughputPlan): Promise<ServerThroughputFigures> {
  const stream = await grpcStreamArguments(directory, server, plan.frame);
  const argumentsFor = (requests: number): string[] => [
    '--requests', String(requests),
    '--clients', String(plan.connections),
    '--max-concurrent-streams', String(plan.streamsPerConnection),
    ...stream,
  ];
  await run(argumentsFor(Math.max(plan.connections * plan.streamsPerConnection, Math.round(plan.requests / WARMUP_FRACTION))));
  await plan.window?.opened();
  const cpuBefore = await server.cpuMicros();
  const output = await run(argumentsFor(plan.requests));
  const serverCpuMicros = (await server.cpuMicros()) - cpuBefore;
  await plan.window?.closing();
  const { seconds, succeeded } = parseH2loadOutput(output);
  if (succeeded < plan.requests) throw new Error(`h2load: ${plan.requests - succeeded} of ${plan.requests} requests failed\n${output}`);
  const serverCpuSeconds = serverCpuMicros / 1e6;
  return {
    requests: plan.requests,
    succeeded,
    seconds: round(seconds, 3),
    requestsPerSecond: round(succeeded / seconds, 0),
    serverCpuSeconds: round(serverCpuSeconds, 3),
    coresUsed: round(serverCpuSeconds / seconds, 2),
    requestsPerSecondPerCore: round(succeeded / serverCpuSeconds, 0),
    cpuMicrosPerRequest: round(serverCpuMicros / succeeded, 1),
  };
}

export interface FixedRatePlan {
  frame: Buffer;
  ratePerSecond: number;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
}

/**
 * Latency at a fixed rate, from h2load (C) rather than a Node client, which on a 2-vCPU machine
 * could not keep the schedule beside the server it loads: `--rps` starts each connection's
 * requests on a timer whether or not earlier ones were answered (open loop), and `--log-file` gives
 * each request's time to its end. Streams are not limited by h2load (`-m` far above what the rate
 * keeps in flight), so none waits for another to end; the achieved rate is checked against the
 * plan, which shows a schedule that slipped.
 */
export async function measureFixedRateWithH2load(server: ChildServer, plan: FixedRatePlan): Promise<OpenLoopFigures> {
  return inScratchDirectory((directory) => measureFixedRateWithFilesIn(directory, server, plan));
}

/**
 * Runs `use` with a new directory under the system's temporary one, and removes the directory
 * afterwards whether `use` succeeded or threw: each h2load run reads its frame from a file and
 * writes its log to one, and a measurement that returns or throws leaves neither behind.
 */
export async function inScratchDirectory<T>(use: (directory: string) => Promise<T>): Promise<T> {
  const directory = await mkdtemp(join(tmpdir(), 'svc-cache-bench-'));
  try {
    return await use(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

async function measureFixedRateWithFilesIn(directory: string, server: ChildServer, plan: FixedRatePlan): Promise<OpenLoopFigures> {
  const logFile = join(directory, 'fixed-rate.log');
  await run([
    '--rps', String(plan.ratePerSecond / plan.connections),
    '--clients', String(plan.connections),
    '--max-concurrent-streams', String(FIXED_RATE_MAX_STREAMS),
    '--duration', String(plan.durationSeconds),
    '--warm-up-time', String(plan.warmupSeconds),
    '--log-file', logFile,
    ...(await grpcStreamArguments(directory, server, plan.frame)),
  ]);
  const log = readFixedRateLog(await readFile(logFile, 'utf8'));
  const sorted = log.answeredMs.sort();
  const errors = log.errors;
  const achieved = log.closed / plan.durationSeconds;
  const slipped = achieved < plan.ratePerSecond * MIN_ACHIEVED_SHARE;
  return {
    ratePerSecond: plan.ratePerSecond,
    durationSeconds: plan.durationSeconds,
    requests: log.closed,
    errors: errors + (slipped ? 1 : 0),
    p50Ms: round(percentile(sorted, 0.5), 3),
    p99Ms: round(percentile(sorted, 0.99), 3),
    maxMs: round(sorted[sorted.length - 1] ?? NaN, 3),
    ...(slipped
      ? { firstError: `h2load sent ${round(achieved, 0)}/s of the ${plan.ratePerSecond}/s planned: the schedule slipped` }
      : errors > 0
        ? { firstError: `${errors} streams failed or were not answered with 200` }
        : {}),
  };
}

/**
 * An h2load `--log-file`: per stream that closed in the measured phase, its start (µs since the
 * epoch), HTTP status and time to its end (µs). A failed stream is logged with status -1. h2load
 * records a status only for response headers that arrive in the measured phase (nghttp2's h2load.cc,
 * `Client::on_status_code`), so a stream answered during the warm-up that closed after it is logged
 * with status 0: it succeeded, as h2load's own summary counts it, and it is neither an error nor a
 * latency of the measured phase.
 */
export function readFixedRateLog(text: string): { answeredMs: Float64Array; errors: number; closed: number } {
  const answeredMs: number[] = [];
  let errors = 0;
  let closed = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [, status, micros] = line.split('\t').map(Number);
    closed += 1;
    if (status === 200) answeredMs.push(micros! / 1000);
    else if (status !== 0) errors += 1;
  }
  return { answeredMs: Float64Array.from(answeredMs), errors, closed };
}

/** Streams h2load may keep open per connection: far above what half the floor's rate keeps in flight. */
const FIXED_RATE_MAX_STREAMS = 1000;
/** Below this share of the planned rate, the figures do not describe that rate. */
const MIN_ACHIEVED_SHARE = 0.95;

/**
 * h2load's arguments for streams that each send `frame` to the server's ext_proc method over h2c,
 * with gRPC's headers; the frame is written to a file in `directory`.
 */
async function grpcStreamArguments(directory: string, server: ChildServer, frame: Buffer): Promise<string[]> {
  const frameFile = join(directory, 'frame.bin');
  await writeFile(frameFile, frame);
  return [
    '--data', frameFile,
    ...Object.entries(GRPC_REQUEST_HEADERS)
      .filter(([name]) => !name.startsWith(':'))
      .flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
    `http://127.0.0.1:${server.port}${GRPC_REQUEST_HEADERS[':path']}`,
  ];
}

/** One run's duration (h2load's own clock) and the requests that ended with a 2xx status. */
export function parseH2loadOutput(output: string): { seconds: number; succeeded: number } {
  const finished = /finished in ([\d.]+)(m?s),/.exec(output);
  const statuses = /status codes: (\d+) 2xx/.exec(output);
  if (!finished || !statuses) throw new Error(`unexpected h2load output:\n${output}`);
  const seconds = Number(finished[1]) / (finished[2] === 'ms' ? 1000 : 1);
  return { seconds, succeeded: Number(statuses[1]) };
}

/** The warm-up run sends this fraction of the measured run's requests. */
const WARMUP_FRACTION = 10;
const H2LOAD_TIMEOUT_MS = 120_000;

async function run(args: readonly string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('h2load', args, { timeout: H2LOAD_TIMEOUT_MS, maxBuffer: 1024 * 1024 });
  return stdout;
}
