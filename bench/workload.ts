import { randomUUID } from 'node:crypto';
import { BodySendMode, type ProcessingRequest } from '../src/extproc/messages.js';

/**
 * What every scenario sends and answers: one GraphQL query over POST, and the origin's ~2 KB answer
 * to it. The sidecar is fed that answer by the load generator playing the origin, and the Yoga peer
 * resolves the same todos, so both serve identical bytes on a HIT.
 */

export const GRAPHQL_PATH = '/graphql';

/** The query every HIT scenario asks; its selection needs no key fields added, so it is forwarded untouched. */
export const HIT_QUERY = '{ todos { id title done } }';

/** The HMAC secret of the JWT scope's HIT scenario, and the one user's token its requests carry. */
export const BENCH_JWT_SECRET = 'bench-jwt-secret-of-32-bytes-long!';

export interface BenchTodo {
  id: string;
  title: string;
  done: boolean;
}

/** Todos enough for an answer of about 2 KB, the size of a typical list query's result. */
export const BENCH_TODOS: readonly BenchTodo[] = todosFillingBytes(2048);

export const ORIGIN_RESPONSE_BODY: Buffer = responseBodyOfBytes(2048);

/** An answer of the same shape as ORIGIN_RESPONSE_BODY of about `targetBytes` (bench/compression.ts). */
export function responseBodyOfBytes(targetBytes: number): Buffer {
  return Buffer.from(JSON.stringify({ data: { todos: todosFillingBytes(targetBytes) } }));
}

export const ORIGIN_CONTENT_TYPE = 'application/json; charset=utf-8';

export function graphqlRequestBody(query: string, operationName?: string): Buffer {
  return Buffer.from(JSON.stringify(operationName === undefined ? { query } : { query, operationName }));
}

/**
 * The query of the n-th MISS: a fresh operation name gives a fresh cache key while the document,
 * and so the origin's answer, stays the same.
 */
export function missQuery(sequence: number): { query: string; operationName: string } {
  const operationName = `Miss${sequence}`;
  return { query: `query ${operationName} { todos { id title done } }`, operationName };
}

/**
 * `decoding`: a client that accepts compressed answers, as browsers and most HTTP clients do (the
 * sidecar answers a HIT with the stored gzip bytes); `identity`: one that sends no `accept-encoding`
 * (the sidecar decompresses for it).
 */
export type BenchClient = 'decoding' | 'identity';

/**
 * Envoy's first message of a POST: headers as the HTTP connection manager hands them on (lower-case,
 * pseudo-headers, its own x-request-id and x-forwarded-proto), values in raw_value only, with the
 * empty metadata context and the protocol configuration current Envoy puts on a stream's first message.
 */
export function postRequestHeaders(body: Buffer, extraHeaders: ReadonlyArray<readonly [string, string]> = [], client: BenchClient = 'decoding'): ProcessingRequest {
  return {
    request_headers: {
      headers: headerMap([
        [':authority', 'localhost:8080'],
        [':path', GRAPHQL_PATH],
        [':method', 'POST'],
        [':scheme', 'http'],
        ['content-type', 'application/json'],
        ['accept', 'application/json'],
        ...(client === 'decoding' ? [['accept-encoding', 'gzip, deflate, br'] as const] : []),
        ['user-agent', 'svc-cache-bench'],
        ['content-length', String(body.length)],
        ['x-forwarded-proto', 'http'],
        ['x-request-id', randomUUID()],
        ...extraHeaders,
      ]),
      end_of_stream: false,
    },
    metadata_context: {},
    protocol_config: {
      request_body_mode: BodySendMode.BUFFERED,
      response_body_mode: BodySendMode.BUFFERED,
      send_body_without_waiting_for_header_response: false,
    },
  };
}

/**
 * Envoy's only message of a GET HIT: the request headers, ending the request, with the query in the
 * URL. The sidecar answers it with an immediate response, so one message is the whole stream.
 */
export function getRequestHeaders(query: string): ProcessingRequest {
  return {
    request_headers: {
      headers: headerMap([
        [':authority', 'localhost:8080'],
        [':path', `${GRAPHQL_PATH}?query=${encodeURIComponent(query)}`],
        [':method', 'GET'],
        [':scheme', 'http'],
        ['accept', 'application/json'],
        ['user-agent', 'svc-cache-bench'],
        ['x-forwarded-proto', 'http'],
        ['x-request-id', randomUUID()],
      ]),
      end_of_stream: true,
    },
    metadata_context: {},
    protocol_config: {
      request_body_mode: BodySendMode.BUFFERED,
      response_body_mode: BodySendMode.BUFFERED,
      send_body_without_waiting_for_header_response: false,
    },
  };
}

export function requestBodyMessage(body: Buffer): ProcessingRequest {
  return { request_body: { body, end_of_stream: true }, metadata_context: {} };
}

/** The origin's response headers as Envoy's router presents them. */
export function originResponseHeaders(body: Buffer): ProcessingRequest {
  return {
    response_headers: {
      headers: headerMap([
        [':status', '200'],
        ['content-type', ORIGIN_CONTENT_TYPE],
        ['content-length', String(body.length)],
        ['date', new Date().toUTCString()],
        ['x-envoy-upstream-service-time', '1'],
      ]),
      end_of_stream: false,
    },
    metadata_context: {},
  };
}

export function originResponseBodyMessage(body: Buffer): ProcessingRequest {
  return { response_body: { body, end_of_stream: true }, metadata_context: {} };
}

function headerMap(headers: ReadonlyArray<readonly [string, string]>): { headers: Array<{ key: string; raw_value: Buffer }> } {
  return { headers: headers.map(([key, value]) => ({ key, raw_value: Buffer.from(value, 'latin1') })) };
}

function todosFillingBytes(targetBytes: number): BenchTodo[] {
  const todos: BenchTodo[] = [];
  const encodedLength = (): number => Buffer.byteLength(JSON.stringify({ data: { todos } }));
  for (let index = 1; index <= 10_000 && encodedLength() < targetBytes; index += 1) {
    todos.push({ id: String(index), title: `Benchmark todo ${index}: water the plants`, done: index % 3 === 0 });
  }
  return todos;
}
