import * as grpc from '@grpc/grpc-js';
import type { HeaderMutation, ProcessingRequest, ProcessingResponse } from '../../src/extproc/messages.js';
import { externalProcessorClient } from '../../src/extproc/protocol.js';

/** One ext_proc stream driven by hand with Envoy-shaped messages, answers read in order. */
export interface DrivenStream {
  send(message: ProcessingRequest): void;
  /** The next answer; rejects if the stream ends first. */
  next(): Promise<ProcessingResponse>;
  /** Sends a message and waits for its answer. */
  exchange(message: ProcessingRequest): Promise<ProcessingResponse>;
  halfClose(): void;
  cancel(): void;
  /** The final gRPC status of the stream. */
  status: Promise<grpc.StatusObject>;
}

export interface ExtProcTestClient {
  open(): DrivenStream;
  close(): void;
}

export function connectExtProc(port: number): ExtProcTestClient {
  const Client = externalProcessorClient();
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    open: () => drive(client.Process!() as grpc.ClientDuplexStream<ProcessingRequest, ProcessingResponse>),
    close: () => client.close(),
  };
}

/** A query and an origin answer to it, for tests that play a whole exchange. */
export const QUERY_BODY = Buffer.from(JSON.stringify({ query: '{ todos { id title } }' }));
export const ORIGIN_BODY = Buffer.from('{"data":{"todos":[{"id":"1","title":"a"}]}}');

/** The request_headers message Envoy sends for a POST of `body` (a body follows). */
export function envoyPostHeaders(body: Buffer = QUERY_BODY, extra: Record<string, string> = {}): ProcessingRequest {
  return {
    request_headers: {
      headers: headerMap({
        ':method': 'POST',
        ':path': '/graphql',
        ':authority': 'example.test',
        ':scheme': 'http',
        'content-type': 'application/json',
        'content-length': String(body.length),
        ...extra,
      }),
      end_of_stream: false,
    },
  };
}

/** Envoy-shaped header map: lower-case keys, values in raw_value only. */
export function headerMap(headers: Record<string, string>): { headers: Array<{ key: string; raw_value: Buffer }> } {
  return { headers: Object.entries(headers).map(([key, value]) => ({ key, raw_value: Buffer.from(value) })) };
}

/** Header mutations of an answer as a plain map (raw_value decoded); asserts `value` is never used. */
export function setHeaders(mutation: HeaderMutation | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const option of mutation?.set_headers ?? []) {
    if (!option.header) continue;
    if (option.header.value) throw new Error(`header ${option.header.key} uses value instead of raw_value`);
    result[option.header.key ?? ''] = option.header.raw_value?.toString('latin1') ?? '';
  }
  return result;
}

function drive(call: grpc.ClientDuplexStream<ProcessingRequest, ProcessingResponse>): DrivenStream {
  const answers: ProcessingResponse[] = [];
  const waiting: Array<{ resolve: (answer: ProcessingResponse) => void; reject: (error: Error) => void }> = [];
  let ended: Error | undefined;
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('data', (answer: ProcessingResponse) => {
    const waiter = waiting.shift();
    if (waiter) waiter.resolve(answer);
    else answers.push(answer);
  });
  const finish = (error: Error) => {
    ended = error;
    for (const waiter of waiting.splice(0)) waiter.reject(error);
  };
  call.on('error', (error: Error) => finish(error));
  call.on('end', () => finish(new Error('stream ended')));
  const next = () =>
    new Promise<ProcessingResponse>((resolve, reject) => {
      const answer = answers.shift();
      if (answer) resolve(answer);
      else if (ended) reject(ended);
      else waiting.push({ resolve, reject });
    });
  return {
    send: (message) => call.write(message),
    next,
    exchange: (message) => {
      call.write(message);
      return next();
    },
    halfClose: () => call.end(),
    cancel: () => call.cancel(),
    status,
  };
}
