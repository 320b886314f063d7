import * as grpc from '@grpc/grpc-js';
import type { ProcessingRequest, ProcessingResponse } from '../extproc/messages.js';
import { externalProcessorClient, externalProcessorService } from '../extproc/protocol.js';

export interface ProcessorStreamHandlers {
  message(response: ProcessingResponse): void;
  /** The server ended the call: OK is a clean close, anything else an error (ext_proc.md §6). */
  remoteClose(code: grpc.status, details: string): void;
}

/**
 * One channel (one HTTP/2 connection) to the ext_proc server, shared by every HTTP request as Envoy's
 * cluster connection is; each request gets its own Process stream on it.
 */
export class ProcessorClient {
  private readonly client: grpc.Client;
  private readonly process: grpc.MethodDefinition<ProcessingRequest, ProcessingResponse>;

  constructor(address: string) {
    const Client = externalProcessorClient();
    this.client = new Client(address, grpc.credentials.createInsecure(), {
      // Envoy's gRPC client has no receive limit by default (§1.6): immediate responses can carry big bodies.
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      // The sidecar cluster's HTTP/2 keepalive in the production envoy.yaml (§7.1).
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 5_000,
      // Envoy reconnects to a cluster host on demand; grpc-js would otherwise back off for up to two minutes.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
      // Envoy's ext_proc stream has no retry policy: a message is never sent twice.
      'grpc.enable_retries': 0,
    });
    this.process = externalProcessorService()['Process'] as grpc.MethodDefinition<
      ProcessingRequest,
      ProcessingResponse
    >;
  }

  openStream(handlers: ProcessorStreamHandlers): ProcessorStream {
    const call = this.client.makeBidiStreamRequest(
      this.process.path,
      this.process.requestSerialize,
      this.process.responseDeserialize,
    );
    return new ProcessorStream(call, handlers);
  }

  close(): void {
    this.client.close();
  }
}

/** A Process call seen from Envoy's side: messages out, answers and the final status in. */
export class ProcessorStream {
  private closed = false;

  constructor(
    private readonly call: grpc.ClientDuplexStream<ProcessingRequest, ProcessingResponse>,
    handlers: ProcessorStreamHandlers,
  ) {
    call.on('data', (response: ProcessingResponse) => {
      if (!this.closed) handlers.message(response);
    });
    call.on('status', (status: grpc.StatusObject) => {
      if (this.closed) return;
      this.closed = true;
      handlers.remoteClose(status.code, status.details);
    });
    // grpc-js reports a non-OK status as 'error' as well; 'status' above is the one place it is handled.
    call.on('error', () => undefined);
  }

  send(request: ProcessingRequest): void {
    if (!this.closed) this.call.write(request);
  }

  /**
   * Envoy's closeStream(): half-close, then reset at once (§2.2 item 5); nothing is delivered afterwards.
   * False when the server had already ended the call, which Envoy does not count in `streams_closed`.
   */
  close(): boolean {
    if (this.closed) return false;
    this.closed = true;
    this.call.end();
    this.call.cancel();
    return true;
  }
}
