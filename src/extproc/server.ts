import * as grpc from '@grpc/grpc-js';
import type { DecisionEngine } from '../engine/engine.js';
import type { Logger } from '../observability/log.js';
import type { ProcessingRequest, ProcessingResponse } from './messages.js';
import { MAX_GRPC_MESSAGE_BYTES, externalProcessorService } from './protocol.js';
import { ProcessingStream, ProtocolViolation } from './stream.js';

export interface ExtProcServerOptions {
  engine: DecisionEngine;
  logger: Logger;
  /** 0 picks a free port. */
  port: number;
  host?: string;
}

export interface ExtProcServer {
  port: number;
  /** Stops taking new streams and waits up to `graceMs` for open ones before cutting them. */
  close(graceMs?: number): Promise<void>;
}

/** The ext_proc gRPC service Envoy streams every HTTP request through. */
export async function startExtProcServer(options: ExtProcServerOptions): Promise<ExtProcServer> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_GRPC_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_GRPC_MESSAGE_BYTES,
  });
  server.addService(externalProcessorService(), {
    Process: (call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>) =>
      serveStream(call, options.engine, options.logger),
  });
  const address = `${options.host ?? '0.0.0.0'}:${options.port}`;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return {
    port,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const deadline = setTimeout(() => server.forceShutdown(), graceMs);
        server.tryShutdown(() => {
          clearTimeout(deadline);
          resolve();
        });
      }),
  };
}

/**
 * Messages of one stream are handled strictly in order, one answer each. Envoy ends a stream with a
 * half-close followed at once by a cancel (ext_proc.md section 2.2 item 5): both are normal.
 */
function serveStream(
  call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>,
  engine: DecisionEngine,
  logger: Logger,
): void {
  const stream = new ProcessingStream(engine, logger);
  let finished = false;
  let pending: Promise<void> = Promise.resolve();

  const fail = (code: grpc.status, details: string): void => {
    if (finished) return;
    finished = true;
    logger.warn({ details }, 'ending ext_proc stream that broke the protocol');
    call.emit('error', { code, details, metadata: new grpc.Metadata() });
  };

  call.on('data', (message: ProcessingRequest) => {
    pending = pending.then(async () => {
      if (finished) return;
      try {
        const answer = await stream.handle(message);
        if (!finished && message.observability_mode !== true) call.write(answer);
      } catch (error) {
        if (error instanceof ProtocolViolation) fail(grpc.status.INVALID_ARGUMENT, error.message);
        else fail(grpc.status.INTERNAL, 'internal error');
        if (!(error instanceof ProtocolViolation)) logger.error({ err: String(error) }, 'ext_proc stream failed');
      }
    });
  });
  call.on('end', () => {
    pending = pending.then(() => {
      if (finished) return;
      finished = true;
      call.end();
    });
  });
  call.on('cancelled', () => {
    finished = true;
  });
  call.on('error', () => {
    finished = true;
  });
}
