import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { DecisionEngine, RequestSummary } from '../engine/index.js';
import type { Logger } from '../observability/index.js';
import type { Metrics } from '../observability/index.js';
import type { ProcessingRequest, ProcessingResponse } from './messages.js';
import { EXT_PROC_SERVICE, MAX_GRPC_MESSAGE_BYTES, externalProcessorService } from './protocol.js';
import { ProcessingStream, ProtocolViolation } from './stream.js';
import { adoptStreamTables } from './streamTable.js';
import { errorMessage, ListenError } from '../util/index.js';

export interface ExtProcServerOptions {
  engine: DecisionEngine;
  logger: Logger;
  metrics: Metrics;
  /** Told what each request came to once its stream ends, however it ends. */
  onRequestCompleted?: (summary: RequestSummary) => void;
  /** 0 picks a free port. */
  port: number;
  /** The address to bind; loopback unless told otherwise (README, "Add it to your pod"). */
  host?: string;
  /** TLS with client-certificate verification (config `grpc.tls`); clear text when absent. */
  credentials?: grpc.ServerCredentials;
}

export interface ExtProcServer {
  port: number;
  /**
   * Reports NOT_SERVING on the health service, stops taking new streams and waits up to `graceMs`
   * for open ones before cutting them.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * Names the standard health service (`grpc.health.v1.Health`) answers for: the empty name, which
 * Envoy's gRPC health check asks about unless told otherwise, and the ext_proc service itself.
 */
export const HEALTH_SERVICE_NAMES = ['', EXT_PROC_SERVICE] as const;

/** The ext_proc gRPC service Envoy streams every HTTP request through, and its health service. */
export async function startExtProcServer(options: ExtProcServerOptions): Promise<ExtProcServer> {
  const { logger } = options;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_GRPC_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_GRPC_MESSAGE_BYTES,
  });
  const health = new HealthImplementation();
  const setHealth = (status: ServingStatus): void => {
    for (const name of HEALTH_SERVICE_NAMES) health.setStatus(name, status);
  };
  setHealth('SERVING');
  health.addToServer(server);
  let openStreams = 0;
  server.addService(externalProcessorService(), {
    Process: (call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>) => {
      openStreams += 1;
      serveStream(call, options, () => (openStreams -= 1));
    },
  });
  const address = `${options.host ?? '127.0.0.1'}:${options.port}`;
  const credentials = options.credentials ?? grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, credentials, (error, bound) =>
      error ? reject(new ListenError('ext_proc', address, error.message)) : resolve(bound),
    ),
  );
  adoptStreamTables(server, (reason) => logger.warn({ reason }, 'HTTP/2 sessions keep Node\'s own stream map'));
  return {
    port,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        setHealth('NOT_SERVING');
        logger.info({ openStreams, graceMs }, 'ext_proc server draining');
        const deadline = setTimeout(() => {
          logger.warn({ openStreams }, 'ext_proc streams still open at the shutdown deadline; cutting them');
          server.forceShutdown();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(deadline);
          resolve();
        });
      }),
  };
}

/**
 * An answer still being worked out after ASK_FOR_MORE_TIME_AFTER_MS (a purge or an invalidation of
 * many entries, Redis slow to reply) first asks Envoy for MORE_TIME: past its `message_timeout`
 * (1 s in deploy/sidecar/envoy.yaml) Envoy goes on without svc-cache, which would forward a purge
 * to the origin and hand a mutation's answer over with the fields svc-cache added. Envoy grants it
 * once per message, up to its `max_message_timeout` (5 s there), which must not be lower than
 * MORE_TIME or the request is ignored (docs/ext-proc.md, Timeouts and failure modes). A GET's
 * headers may take as long: a request coalesced behind another waits up to `coalesceWaitMs` (800 ms
 * by default) besides its lookups, which a slow Redis stretches past Envoy's 1 s.
 */
const ASK_FOR_MORE_TIME_AFTER_MS = 500;
const MORE_TIME: ProcessingResponse = { override_message_timeout: { seconds: 5 } };

/**
 * A body this large is asked more time for before it is handled: its work is linear, but may hold the
 * event loop past ASK_FOR_MORE_TIME_AFTER_MS in one piece, when no timer can fire (a purge of 100,000
 * ids, 889 KB, took over 1 s on a loaded machine and was forwarded to the origin). A GraphQL request
 * or answer is usually a few kilobytes.
 */
const ASK_AT_ONCE_FROM_BODY_BYTES = 128 * 1024;

/** When to ask Envoy for more time for this message: at once, after ASK_FOR_MORE_TIME_AFTER_MS, or never. */
function moreTimeAsked(message: ProcessingRequest): 'at-once' | 'after-a-while' | 'never' {
  if (message.observability_mode === true) return 'never';
  const body = message.request_body?.body ?? message.response_body?.body;
  return body !== undefined && body.length >= ASK_AT_ONCE_FROM_BODY_BYTES ? 'at-once' : 'after-a-while';
}

/**
 * Messages of one stream are handled strictly in order, one answer each. Envoy ends a stream with a
 * half-close followed at once by a cancel (docs/ext-proc.md, Stream close): both are normal. The
 * request's outcome is counted once, whichever way the stream ends, and the stream's listeners are
 * then taken off the call: a finished HTTP/2 stream, and the call it holds, can stay in the heap
 * until the next full collection (docs/performance.md, Garbage collection), and without them the
 * call holds none of the exchange.
 */
export function serveStream(
  call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>,
  options: ExtProcServerOptions,
  onClosed: () => void,
): void {
  const { logger, metrics } = options;
  const stream = new ProcessingStream(options.engine);
  let finished = false;
  let counted = false;
  let pending: Promise<void> = Promise.resolve();
  /** Messages received and not yet answered: one left when Envoy ends the stream is an answer it gave up on. */
  let unanswered = 0;
  metrics.streamOpened();

  const countOutcome = (): void => {
    if (counted) return;
    counted = true;
    // First, so that a throw below cannot skip it (the handlers are defined further down).
    call.off('data', onData).off('end', onEnd).off('cancelled', onCancelledOrFailed).off('error', onCancelledOrFailed);
    stream.close();
    const summary = stream.summary;
    metrics.streamClosed();
    if (unanswered > 0) {
      metrics.recordStreamAbandoned();
      logger.info({ outcome: summary.outcome ?? 'undecided' }, 'Envoy ended the ext_proc stream before its answer (message_timeout, or the client went away)');
    }
    logger.debug(
      { outcome: summary.outcome ?? 'undecided', passReason: summary.passReason, errorCode: summary.errorCode },
      'ext_proc stream closed',
    );
    try {
      options.onRequestCompleted?.(summary);
    } catch (error) {
      logger.error({ err: errorMessage(error) }, 'a request observer failed');
    }
    onClosed();
  };

  const fail = (code: grpc.status.INVALID_ARGUMENT | grpc.status.INTERNAL, details: string): void => {
    if (finished) return;
    finished = true;
    logger.warn({ details }, 'ending ext_proc stream that broke the protocol');
    metrics.recordStreamError(code === grpc.status.INVALID_ARGUMENT ? 'INVALID_ARGUMENT' : 'INTERNAL');
    call.emit('error', { code, details, metadata: new grpc.Metadata() });
  };

  const onData = (message: ProcessingRequest): void => {
    unanswered += 1;
    pending = pending.then(async () => {
      if (finished) {
        unanswered -= 1;
        return;
      }
      const started = process.hrtime.bigint();
      const asked = moreTimeAsked(message);
      if (asked === 'at-once') call.write(MORE_TIME);
      const moreTime = asked === 'after-a-while' ? setTimeout(() => !finished && call.write(MORE_TIME), ASK_FOR_MORE_TIME_AFTER_MS) : undefined;
      try {
        const answer = await stream.handle(message);
        clearTimeout(moreTime);
        unanswered -= 1;
        if (message.request !== undefined) {
          metrics.observeDecisionSeconds(message.request, Number(process.hrtime.bigint() - started) / 1e9);
        }
        if (!finished && message.observability_mode !== true) {
          call.write(answer);
          // Ending a finished exchange first leaves Envoy's closing RST_STREAM nothing open to
          // reset: Node's HTTP/2 guard against rapid resets (CVE-2023-44487) would otherwise count
          // one per request and close the whole connection every ~1000 streams.
          if (stream.complete) {
            finished = true;
            call.end();
          }
        }
      } catch (error) {
        clearTimeout(moreTime);
        unanswered -= 1;
        if (error instanceof ProtocolViolation) fail(grpc.status.INVALID_ARGUMENT, error.message);
        else fail(grpc.status.INTERNAL, 'internal error');
        if (!(error instanceof ProtocolViolation)) logger.error({ err: errorMessage(error) }, 'ext_proc stream failed');
      }
    });
  };
  const onEnd = (): void => {
    pending = pending.then(() => {
      countOutcome();
      if (finished) return;
      finished = true;
      call.end();
    });
  };
  const onCancelledOrFailed = (): void => {
    finished = true;
    countOutcome();
  };
  call.on('data', onData).on('end', onEnd).on('cancelled', onCancelledOrFailed).on('error', onCancelledOrFailed);
}
