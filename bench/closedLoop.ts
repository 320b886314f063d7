import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToEventLoop, setTimeout as sleep } from 'node:timers/promises';

/**
 * Closed-loop load: `concurrency` workers, each starting its next request as soon as its last one is
 * answered, as a fixed pool of clients does. Requests finishing inside the measured window count;
 * the warm-up before it lets the JIT, connection and caches settle.
 */

export interface LoadPlan {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** One request from start to answer; rejects when the answer is not the one expected. */
  request: () => Promise<void>;
  /** CPU time the server has used so far, read as the measured window opens and closes. */
  serverCpuMicros: () => Promise<number>;
  /** Called as the measured window opens and closes, e.g. to profile exactly that stretch. */
  window?: { opened(): Promise<void>; closing(): Promise<void> };
  /** A full garbage collection of the server; runInterleaved asks for one under load before it measures. */
  collectGarbage?: () => Promise<void>;
  /** Ends the run early; it then rejects. */
  signal: AbortSignal;
}

export interface LoadFigures {
  concurrency: number;
  durationSeconds: number;
  requests: number;
  errors: number;
  /** Completed requests (one ext_proc stream, or one HTTP request) per second. */
  streamsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Server CPU time (user + system, every thread) in the window over the requests completed in it. */
  cpuMicrosPerRequest: number;
  firstError?: string;
}

export async function runClosedLoop(plan: LoadPlan): Promise<LoadFigures> {
  const latencies: number[] = [];
  let phase: 'warm-up' | 'measured' | 'over' = 'warm-up';
  let errors = 0;
  let firstError: string | undefined;

  const worker = async (): Promise<void> => {
    while (phase !== 'over') {
      const started = performance.now();
      try {
        await plan.request();
        if (phase === 'measured') latencies.push(performance.now() - started);
      } catch (error) {
        if (phase === 'measured') errors += 1;
        firstError ??= error instanceof Error ? error.message : String(error);
        // A server that is gone fails requests at once; without a pause they would starve timers and I/O.
        await yieldToEventLoop();
      }
    }
  };
  const workers = Promise.all(Array.from({ length: plan.concurrency }, worker));

  let openedAt: number;
  let elapsedMs: number;
  let cpuAtStart: number;
  let cpuAtEnd: number;
  try {
    await sleep(plan.warmupMs, undefined, { signal: plan.signal });
    await plan.window?.opened();
    cpuAtStart = await plan.serverCpuMicros();
    phase = 'measured';
    openedAt = performance.now();
    await sleep(plan.durationMs, undefined, { signal: plan.signal });
    phase = 'over';
    elapsedMs = performance.now() - openedAt;
    cpuAtEnd = await plan.serverCpuMicros();
    await plan.window?.closing();
  } finally {
    phase = 'over';
  }
  await withinTimeout(workers, DRAIN_TIMEOUT_MS, 'requests still unanswered after the measured window');

  const requests = latencies.length;
  const sorted = Float64Array.from(latencies).sort();
  return {
    concurrency: plan.concurrency,
    durationSeconds: round(elapsedMs / 1000, 2),
    requests,
    errors,
    streamsPerSecond: round((requests * 1000) / elapsedMs, 0),
    p50Ms: round(percentile(sorted, 0.5), 3),
    p99Ms: round(percentile(sorted, 0.99), 3),
    cpuMicrosPerRequest: requests === 0 ? NaN : round((cpuAtEnd - cpuAtStart) / requests, 1),
    ...(firstError === undefined ? {} : { firstError }),
  };
}

/**
 * Several closed-loop scenarios measured in turns: one unmeasured round of all of them, then
 * `rounds` measured ones, each scenario reporting its median round by CPU per request. A server's
 * first seconds of load cost it more than later ones (the JIT, the heap still growing) however long
 * the warm-up of a single run, so scenarios compared with each other are measured alike: after the
 * same amount of earlier load, interleaved so a change in the machine's load touches them all.
 * Each server also has a full garbage collection under load in the unmeasured round: after one, every
 * stream the loaded connection finishes survives young collections until the next full one, and a
 * request costs more (docs/performance.md, Garbage collection). A connection Envoy keeps open is in
 * that state after its first, and each scenario's load uses one connection through every round.
 */
export async function runInterleaved<Name extends string>(
  plans: Readonly<Record<Name, LoadPlan>>,
  rounds: number,
  onRound?: (round: number) => void,
): Promise<Record<Name, LoadFigures>> {
  const names = Object.keys(plans) as Name[];
  const measured = new Map<Name, LoadFigures[]>(names.map((name) => [name, []]));
  for (let round = 0; round <= rounds; round += 1) {
    onRound?.(round);
    for (const name of names) {
      const plan = plans[name];
      const figures = await runClosedLoop(round === rounds ? plan : { ...plan, window: round === 0 ? collectingWindow(plan) : undefined });
      if (round > 0) measured.get(name)!.push(figures);
    }
  }
  return Object.fromEntries(names.map((name) => [name, medianRunBy(measured.get(name)!, (run) => run.cpuMicrosPerRequest)])) as Record<Name, LoadFigures>;
}

/**
 * The window of an unmeasured run, whose figures are dropped, used for its moment: as it opens the
 * warm-up is over and the load runs, and the server collects its garbage then.
 */
function collectingWindow(plan: LoadPlan): LoadPlan['window'] {
  const { collectGarbage } = plan;
  return collectGarbage && { opened: collectGarbage, closing: async () => undefined };
}

/** The run of median `figure` (the lower middle one of an even count); runs whose figure is NaN sort last. */
export function medianRunBy<Run>(runs: readonly Run[], figure: (run: Run) => number): Run {
  const key = (run: Run): number => (Number.isNaN(figure(run)) ? Infinity : figure(run));
  const sorted = [...runs].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export interface BatchOutcome {
  failed: number;
  firstError?: string;
}

/** Exactly `count` requests, `concurrency` at a time, or fewer if `signal` ends the batch first. */
export async function runBatch(count: number, concurrency: number, request: () => Promise<void>, signal: AbortSignal): Promise<BatchOutcome> {
  const outcome: BatchOutcome = { failed: 0 };
  let started = 0;
  const worker = async (): Promise<void> => {
    while (started < count && !signal.aborted) {
      started += 1;
      try {
        await request();
      } catch (error) {
        outcome.failed += 1;
        outcome.firstError ??= error instanceof Error ? error.message : String(error);
        await yieldToEventLoop();
      }
    }
  };
  await withinTimeout(
    Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker)),
    BATCH_TIMEOUT_MS,
    `a batch of ${count} requests did not finish`,
  );
  signal.throwIfAborted();
  return outcome;
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** A stuck server must end the run with an error, not hang it. */
const DRAIN_TIMEOUT_MS = 10_000;
const BATCH_TIMEOUT_MS = 30_000;

/** Nearest-rank percentile of ascending `sorted`. */
export function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

async function withinTimeout<T>(work: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
