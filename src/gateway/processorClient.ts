import * as grpc from '@grpc/grpc-js';
import type { ProcessingRequest, ProcessingResponse } from '../extproc/index.js';
import { externalProcessorClient, externalProcessorService } from '../extproc/index.js';

export interface ProcessorStreamHandlers {
  message(response: ProcessingResponse): void;
  /** The server ended the call: OK is a clean close, anything else an error (docs/ext-proc.md, Timeouts and failure modes). */
  remoteClose(code: grpc.status, details: string): void;
}

/**
 * The connection to the ext_proc server, shared by every HTTP request as Envoy's cluster connection
 * is; each request gets its own Process stream on it. Like the sidecar cluster in envoy/envoy.yaml
 * (`max_requests_per_connection`), a connection carries a bounded number of streams and then a new
 * one takes over: Envoy resets every stream it closes, and Node's HTTP/2 guard against rapid resets
 * closes a connection that has received about a thousand of them.
 */
export class ProcessorClient {
  private connection: Connection;
  private readonly process: grpc.MethodDefinition<ProcessingRequest, ProcessingResponse>;

  constructor(
    private readonly address: string,
    private readonly maxStreamsPerConnection = SIDECAR_MAX_REQUESTS_PER_CONNECTION,
  ) {
    this.connection = { client: this.connect(), opened: 0, active: 0, retired: false };
    this.process = externalProcessorService()['Process'] as grpc.MethodDefinition<
      ProcessingRequest,
      ProcessingResponse
    >;
  }

  openStream(handlers: ProcessorStreamHandlers): ProcessorStream {
    if (this.connection.opened >= this.maxStreamsPerConnection) {
      this.retire(this.connection);
      this.connection = { client: this.connect(), opened: 0, active: 0, retired: false };
    }
    const connection = this.connection;
    connection.opened += 1;
    connection.active += 1;
    const call = connection.client.makeBidiStreamRequest(
      this.process.path,
      this.process.requestSerialize,
      this.process.responseDeserialize,
    );
    call.on('status', () => {
      connection.active -= 1;
      if (connection.retired && connection.active === 0) connection.client.close();
    });
    return new ProcessorStream(call, handlers);
  }

  close(): void {
    this.connection.client.close();
  }

  /** A retired connection takes no new streams and closes once its last one ends, as Envoy drains it. */
  private retire(connection: Connection): void {
    connection.retired = true;
    if (connection.active === 0) connection.client.close();
  }

  private connect(): grpc.Client {
    const Client = externalProcessorClient();
    return new Client(this.address, grpc.credentials.createInsecure(), {
      // Envoy's gRPC client has no receive limit by default (docs/ext-proc.md, Buffer limits): immediate responses can carry big bodies.
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      // The sidecar cluster's HTTP/2 keepalive in the production envoy.yaml (docs/ext-proc.md, Envoy configuration).
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 5_000,
      // Envoy reconnects to a cluster host on demand; grpc-js would otherwise back off for up to two minutes.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
      // Envoy's ext_proc stream has no retry policy: a message is never sent twice.
      'grpc.enable_retries': 0,
      // A connection of its own: grpc-js would otherwise share one subchannel between clients.
      'grpc.use_local_subchannel_pool': 1,
    });
  }
}

interface Connection {
  client: grpc.Client;
  /** Streams opened on it so far. */
  opened: number;
  /** Streams still open on it. */
  active: number;
  retired: boolean;
}

/** `max_requests_per_connection` of the sidecar cluster in envoy/envoy.yaml. */
export const SIDECAR_MAX_REQUESTS_PER_CONNECTION = 500;

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
   * Envoy's closeStream(): half-close, then reset at once (docs/ext-proc.md, Stream close); nothing is delivered afterwards.
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
