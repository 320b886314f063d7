import { connect, type ClientHttp2Session } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { percentile, round } from './closedLoop.js';
import { GRPC_REQUEST_HEADERS } from './grpcFrame.js';

/**
 * Open-loop load: streams start on a fixed schedule (every 1/rate seconds) whether or not earlier
 * ones were answered, and each latency runs from the stream's scheduled start, not from when the
 * client got round to it. A server that stalls therefore shows its stall in every stream scheduled
 * during it, instead of the load generator quietly waiting along (coordinated omission). h2load's
 * --rate paces connections, not requests, so this client is in Node: bare HTTP/2 streams carrying a
 * prebuilt gRPC message, spread over a few connections as Envoy spreads them.
 */

export interface OpenLoopPlan {
  port: number;
  /** The length-prefixed gRPC message every stream sends (see grpcFrame.ts). */
  frame: Buffer;
  ratePerSecond: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Whether the bytes a stream was answered with are the answer expected (e.g. a HIT). */
  answered: (responseBytes: number) => boolean;
  signal: AbortSignal;
}

export interface OpenLoopFigures {
  ratePerSecond: number;
  durationSeconds: number;
  /** Streams scheduled in the measured window. */
  requests: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  firstError?: string;
}

export async function runOpenLoop(plan: OpenLoopPlan): Promise<OpenLoopFigures> {
  const sessions = await Promise.all(Array.from({ length: plan.connections }, () => openSession(plan.port)));
  // A connection the server closes (GOAWAY) fails the streams sent on it, and is replaced, as
  // Envoy replaces one: the schedule goes on.
  const replaceWhenClosed = (slot: number): void => {
    sessions[slot]!.once('close', () => {
      if (plan.signal.aborted || closing) return;
      openSession(plan.port).then(
        (session) => {
          sessions[slot] = session;
          replaceWhenClosed(slot);
        },
        () => replaceWhenClosed(slot),
      );
    });
  };
  let closing = false;
  sessions.forEach((_, slot) => replaceWhenClosed(slot));
  const latencies: number[] = [];
  const outcome = { errors: 0, firstError: undefined as string | undefined, unanswered: 0 };
  const intervalMs = 1000 / plan.ratePerSecond;
  const total = Math.floor(((plan.warmupMs + plan.durationMs) * plan.ratePerSecond) / 1000);
  const startedAt = performance.now();
  const measuredFrom = startedAt + plan.warmupMs;
  try {
    for (let sent = 0; sent < total; ) {
      plan.signal.throwIfAborted();
      const due = Math.min(total, Math.floor((performance.now() - startedAt) / intervalMs) + 1);
      for (; sent < due; sent += 1) {
        const scheduledAt = startedAt + sent * intervalMs;
        const measured = scheduledAt >= measuredFrom;
        if (measured) outcome.unanswered += 1;
        send(sessions[sent % sessions.length]!, plan, (error) => {
          if (!measured) return;
          outcome.unanswered -= 1;
          if (error === undefined) latencies.push(performance.now() - scheduledAt);
          else {
            outcome.errors += 1;
            outcome.firstError ??= error;
          }
        });
      }
      // Timers fire about once a millisecond: streams that fell due meanwhile leave together, each
      // timed from its own scheduled start.
      await sleep(1);
    }
    const drainUntil = performance.now() + DRAIN_TIMEOUT_MS;
    while (outcome.unanswered > 0 && performance.now() < drainUntil) await sleep(5);
  } finally {
    closing = true;
    for (const session of sessions) session.destroy();
  }
  const sorted = Float64Array.from(latencies).sort();
  return {
    ratePerSecond: plan.ratePerSecond,
    durationSeconds: plan.durationMs / 1000,
    requests: latencies.length + outcome.errors + outcome.unanswered,
    errors: outcome.errors + outcome.unanswered,
    p50Ms: round(percentile(sorted, 0.5), 3),
    p99Ms: round(percentile(sorted, 0.99), 3),
    maxMs: round(sorted[sorted.length - 1] ?? NaN, 3),
    ...(outcome.firstError === undefined
      ? outcome.unanswered > 0
        ? { firstError: `${outcome.unanswered} streams unanswered ${DRAIN_TIMEOUT_MS} ms after the last was sent` }
        : {}
      : { firstError: outcome.firstError }),
  };
}

const DRAIN_TIMEOUT_MS = 10_000;

type OpenLoopSession = ClientHttp2Session & { goawayCodeReceived?: number };

function openSession(port: number): Promise<OpenLoopSession> {
  return new Promise((resolve, reject) => {
    const session: OpenLoopSession = connect(`http://127.0.0.1:${port}`);
    session.once('connect', () => {
      session.off('error', reject);
      // Errors surface on the streams; a session error with no listener would end the process.
      session.on('error', () => undefined);
      session.once('goaway', (code: number) => {
        session.goawayCodeReceived = code;
      });
      resolve(session);
    });
    session.once('error', reject);
  });
}

/** One stream: the frame, then the answer and the gRPC status in the trailers; `done` once. */
function send(session: OpenLoopSession, plan: OpenLoopPlan, done: (error?: string) => void): void {
  let responseBytes = 0;
  let grpcStatus: string | undefined;
  if (session.closed || session.destroyed) {
    done(`connection closed by the server${session.goawayCodeReceived === undefined ? '' : ` (GOAWAY code ${session.goawayCodeReceived})`}`);
    return;
  }
  const stream = session.request(GRPC_REQUEST_HEADERS);
  stream.on('data', (chunk: Buffer) => {
    responseBytes += chunk.length;
  });
  stream.on('trailers', (trailers) => {
    grpcStatus = String(trailers['grpc-status']);
  });
  stream.on('error', () => undefined);
  stream.on('close', () => {
    if (grpcStatus !== '0') done(`stream ended with gRPC status ${grpcStatus ?? 'none'} (RST_STREAM code ${stream.rstCode})`);
    else if (!plan.answered(responseBytes)) done(`unexpected answer of ${responseBytes} bytes`);
    else done();
  });
  stream.end(plan.frame);
}
