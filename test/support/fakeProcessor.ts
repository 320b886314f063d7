import * as grpc from '@grpc/grpc-js';
import type {
  CommonResponse,
  HeaderValueOption,
  HttpHeaders,
  ProcessingRequest,
  ProcessingResponse,
} from '../../src/extproc/messages.js';
import { externalProcessorService, MAX_GRPC_MESSAGE_BYTES } from '../../src/extproc/protocol.js';

/** What happened on one Process stream, for assertions after the HTTP exchange. */
export interface StreamLog {
  received: ProcessingRequest[];
  sent: ProcessingResponse[];
  /** The client half-closed (Envoy's closeStream first step). */
  halfClosed: boolean;
  /** The client reset the stream (Envoy's closeStream second step). */
  cancelled: boolean;
  /** Answers the script wrote after the client had cancelled; they must go nowhere. */
  sentAfterCancel: number;
  /** How the server ended the call, if it did. */
  serverEnded: { code: grpc.status; details: string } | undefined;
}

/** The server side of one Process stream, as a script sees it. */
export interface ScriptedStream {
  readonly log: StreamLog;
  /** The next message from the gateway; undefined once the gateway has closed its side. */
  next(): Promise<ProcessingRequest | undefined>;
  send(response: ProcessingResponse): void;
  /** Ends the call with OK: a clean close. */
  end(): void;
  /** Ends the call with an error status. */
  fail(code: grpc.status, details?: string): void;
  /** Settles when the gateway has cancelled the stream. */
  readonly cancelled: Promise<void>;
}

export type ProcessorScript = (stream: ScriptedStream) => void | Promise<void>;

export interface FakeProcessor {
  /** "127.0.0.1:port", for `GatewayOptions.processor`. */
  readonly address: string;
  /** Every stream opened so far, oldest first. */
  readonly streams: StreamLog[];
  /** The script for streams opened from now on. */
  use(script: ProcessorScript): void;
  close(): Promise<void>;
}

/** A real ext_proc gRPC server on an ephemeral port whose behaviour each test scripts. */
export async function startFakeProcessor(
  script: ProcessorScript = answerEach((request) => continueResponse(request)),
): Promise<FakeProcessor> {
  let current = script;
  const streams: StreamLog[] = [];
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_GRPC_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_GRPC_MESSAGE_BYTES,
    'grpc-node.max_session_memory': 1024,
  });
  server.addService(externalProcessorService(), {
    Process: (call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>) => {
      const stream = new ServerStream(call);
      streams.push(stream.log);
      Promise.resolve(current(stream)).catch((error: unknown) => {
        stream.fail(grpc.status.INTERNAL, `script failed: ${String(error)}`);
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, boundPort) =>
      error ? reject(error) : resolve(boundPort),
    );
  });
  return {
    address: `127.0.0.1:${port}`,
    streams,
    use: (next) => {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 500).unref();
      }),
  };
}

/** A script answering every message with what `answer` returns (nothing, one answer, or several). */
export function answerEach(
  answer: (
    request: ProcessingRequest,
    stream: ScriptedStream,
  ) => ProcessingResponse | ProcessingResponse[] | undefined | Promise<ProcessingResponse | ProcessingResponse[] | undefined>,
): ProcessorScript {
  return async (stream) => {
    for (let request = await stream.next(); request; request = await stream.next()) {
      const answers = await answer(request, stream);
      for (const response of answers === undefined ? [] : [answers].flat()) stream.send(response);
    }
  };
}

/** CONTINUE of the case matching `request`, carrying `common` (mutations, status). */
export function continueResponse(request: ProcessingRequest, common: CommonResponse = {}): ProcessingResponse {
  const kind = request.request;
  if (kind === undefined || kind === 'request_trailers' || kind === 'response_trailers') {
    throw new Error(`cannot answer ${String(kind)}`);
  }
  return { [kind]: { response: common } };
}

/** A set_headers entry in the form current Envoy reads: raw_value only. */
export function setHeader(key: string, value: string, append?: boolean): HeaderValueOption {
  return {
    header: { key, raw_value: Buffer.from(value) },
    ...(append === undefined ? {} : { append: { value: append } }),
  };
}

/** The headers of a request_headers/response_headers message as [name, value] pairs, values from raw_value. */
export function headerPairs(headers: HttpHeaders | undefined): [string, string][] {
  return (headers?.headers?.headers ?? []).map((header) => [
    header.key ?? '',
    header.raw_value ? header.raw_value.toString('latin1') : (header.value ?? ''),
  ]);
}

export function headerValue(headers: HttpHeaders | undefined, name: string): string | undefined {
  return headerPairs(headers).find(([key]) => key === name)?.[1];
}

class ServerStream implements ScriptedStream {
  readonly log: StreamLog = {
    received: [],
    sent: [],
    halfClosed: false,
    cancelled: false,
    sentAfterCancel: 0,
    serverEnded: undefined,
  };
  readonly cancelled: Promise<void>;
  private readonly pending: ProcessingRequest[] = [];
  private waiters: ((request: ProcessingRequest | undefined) => void)[] = [];
  private closedByClient = false;

  constructor(private readonly call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>) {
    call.on('data', (request: ProcessingRequest) => {
      this.log.received.push(request);
      const waiter = this.waiters.shift();
      if (waiter) waiter(request);
      else this.pending.push(request);
    });
    call.on('end', () => {
      this.log.halfClosed = true;
      this.clientGone();
    });
    this.cancelled = new Promise((resolve) => {
      call.on('cancelled', () => {
        this.log.cancelled = true;
        this.clientGone();
        resolve();
      });
    });
    call.on('error', () => undefined);
  }

  next(): Promise<ProcessingRequest | undefined> {
    const request = this.pending.shift();
    if (request) return Promise.resolve(request);
    if (this.closedByClient) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  send(response: ProcessingResponse): void {
    this.log.sent.push(response);
    if (this.log.cancelled) this.log.sentAfterCancel++;
    // Written even after a cancel, like a real server that has not noticed yet; only an ended call refuses it.
    if (this.log.serverEnded) return;
    this.call.write(response);
  }

  end(): void {
    if (this.log.serverEnded) return;
    this.log.serverEnded = { code: grpc.status.OK, details: '' };
    this.call.end();
  }

  fail(code: grpc.status, details = 'scripted failure'): void {
    if (this.log.serverEnded) return;
    this.log.serverEnded = { code, details };
    this.call.emit('error', Object.assign(new Error(details), { code, details }));
  }

  private clientGone(): void {
    this.closedByClient = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter(undefined);
  }
}
