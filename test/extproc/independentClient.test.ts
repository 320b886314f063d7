import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sidecar } from '../../src/sidecar/sidecar.js';
import { bytesField, decodeMessage, encodeMessage, varintField, type Field } from '../support/protobufWire.js';
import { startTestSidecar } from '../support/sidecar.js';

/**
 * An ext_proc client that shares nothing with this repo's proto/ files: the method path and every
 * field number below are taken from Envoy's published API (envoy/service/ext_proc/v3/
 * external_processor.proto, envoy/config/core/v3/base.proto, envoy/type/v3/http_status.proto),
 * and messages are encoded by hand. If a name or number in proto/ drifted from Envoy's, this fails.
 */
const PROCESS = '/envoy.service.ext_proc.v3.ExternalProcessor/Process';

const ProcessingRequest = { request_headers: 2, response_headers: 3, request_body: 4, response_body: 5 };
const ProcessingResponse = { request_headers: 1, response_headers: 2, request_body: 3, response_body: 4, immediate_response: 7, mode_override: 9 };
const HttpHeaders = { headers: 1, end_of_stream: 3 };
const HeaderMap = { headers: 1 };
const HeaderValue = { key: 1, value: 2, raw_value: 3 };
const HttpBody = { body: 1, end_of_stream: 2 };
const CommonResponseWrapper = { response: 1 };
const CommonResponse = { header_mutation: 2, body_mutation: 3 };
const HeaderMutation = { set_headers: 1 };
const HeaderValueOption = { header: 1 };
const ImmediateResponse = { status: 1, headers: 2, body: 3 };
const HttpStatus = { code: 1 };
const ProcessingMode = { response_body_mode: 4 };
const BODY_SEND_MODE_NONE = 0n;

function headers(map: Record<string, string>, endOfStream: boolean): Field[] {
  return [
    [
      HttpHeaders.headers,
      Object.entries(map).map(([key, value]): Field => [
        HeaderMap.headers,
        [
          [HeaderValue.key, key],
          [HeaderValue.raw_value, Buffer.from(value)],
        ],
      ]),
    ],
    [HttpHeaders.end_of_stream, endOfStream],
  ];
}

function body(bytes: Buffer): Field[] {
  return [
    [HttpBody.body, bytes],
    [HttpBody.end_of_stream, true],
  ];
}

type Decoded = ReturnType<typeof decodeMessage>;

/** `set_headers` of a HeaderMutation as a map, asserting values travel in raw_value only. */
function setHeaders(mutation: Buffer | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  if (!mutation) return result;
  for (const option of decodeMessage(mutation).get(HeaderMutation.set_headers) ?? []) {
    const header = decodeMessage(bytesField(decodeMessage(option as Buffer), HeaderValueOption.header)!);
    expect(header.has(HeaderValue.value)).toBe(false);
    result[bytesField(header, HeaderValue.key)!.toString()] = bytesField(header, HeaderValue.raw_value)!.toString();
  }
  return result;
}

function commonResponse(answer: Decoded, field: number): Decoded {
  const wrapper = bytesField(answer, field);
  expect(wrapper, `answer has field ${field}`).toBeDefined();
  return decodeMessage(bytesField(decodeMessage(wrapper!), CommonResponseWrapper.response) ?? Buffer.alloc(0));
}

class RawStream {
  private readonly answers: Buffer[] = [];
  private readonly waiting: Array<(answer: Buffer) => void> = [];
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;

  constructor(client: grpc.Client) {
    this.call = client.makeBidiStreamRequest(PROCESS, (b: Buffer) => b, (b: Buffer) => b);
    this.call.on('data', (answer: Buffer) => {
      const waiter = this.waiting.shift();
      if (waiter) waiter(answer);
      else this.answers.push(answer);
    });
    this.call.on('error', () => undefined);
  }

  exchange(field: number, message: Field[]): Promise<Decoded> {
    this.call.write(encodeMessage([[field, message]]));
    return new Promise<Buffer>((resolve) => {
      const answer = this.answers.shift();
      if (answer) resolve(answer);
      else this.waiting.push(resolve);
    }).then(decodeMessage);
  }

  end(): void {
    this.call.end();
  }
}

describe('ext_proc as an independently written client sees it', () => {
  let sidecar: Sidecar;
  let client: grpc.Client;

  beforeAll(async () => {
    sidecar = await startTestSidecar();
    client = new grpc.Client(`127.0.0.1:${sidecar.grpcPort}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    client.close();
    await sidecar.close(1000);
  });

  it('caches a POST query: MISS by field numbers, then an immediate response HIT', async () => {
    const query = Buffer.from('{"query":"{ todos { id } }"}');
    const requestHeaders = headers(
      { ':method': 'POST', ':path': '/graphql', ':authority': 'x', ':scheme': 'http', 'content-type': 'application/json', 'content-length': String(query.length) },
      false,
    );
    const originBody = Buffer.from('{"data":{"todos":[{"id":"1"}]}}');

    const miss = new RawStream(client);
    const first = await miss.exchange(ProcessingRequest.request_headers, requestHeaders);
    expect([...first.keys()]).toEqual([ProcessingResponse.request_headers]);
    const second = await miss.exchange(ProcessingRequest.request_body, body(query));
    expect([...second.keys()]).toEqual([ProcessingResponse.request_body]);
    const third = await miss.exchange(
      ProcessingRequest.response_headers,
      headers({ ':status': '200', 'content-type': 'application/json', 'content-length': String(originBody.length) }, false),
    );
    expect([...third.keys()]).toEqual([ProcessingResponse.response_headers]);
    const fourth = await miss.exchange(ProcessingRequest.response_body, body(originBody));
    expect([...fourth.keys()]).toEqual([ProcessingResponse.response_body]);
    const missResponse = commonResponse(fourth, ProcessingResponse.response_body);
    expect(setHeaders(bytesField(missResponse, CommonResponse.header_mutation))).toEqual({ 'svc-cache': 'MISS' });
    expect(missResponse.has(CommonResponse.body_mutation)).toBe(false);
    miss.end();

    const hit = new RawStream(client);
    await hit.exchange(ProcessingRequest.request_headers, requestHeaders);
    const answer = await hit.exchange(ProcessingRequest.request_body, body(query));
    expect([...answer.keys()]).toEqual([ProcessingResponse.immediate_response]);
    const immediate = decodeMessage(bytesField(answer, ProcessingResponse.immediate_response)!);
    expect(varintField(decodeMessage(bytesField(immediate, ImmediateResponse.status)!), HttpStatus.code)).toBe(200n);
    expect(bytesField(immediate, ImmediateResponse.body)).toEqual(originBody);
    expect(setHeaders(bytesField(immediate, ImmediateResponse.headers))).toEqual({
      'content-type': 'application/json',
      'svc-cache': 'HIT',
      age: expect.stringMatching(/^\d+$/),
    });
    hit.end();
  });

  it('skips the body of a passed response with mode_override.response_body_mode NONE', async () => {
    // Introspection no rule names: passed, and nothing in the answer to read.
    const introspection = Buffer.from('{"query":"{ __schema { queryType { name } } }"}');
    const stream = new RawStream(client);
    await stream.exchange(
      ProcessingRequest.request_headers,
      headers({ ':method': 'POST', ':path': '/graphql', 'content-type': 'application/json' }, false),
    );
    await stream.exchange(ProcessingRequest.request_body, body(introspection));
    const answer = await stream.exchange(
      ProcessingRequest.response_headers,
      headers({ ':status': '200', 'content-type': 'application/json' }, false),
    );
    expect(setHeaders(bytesField(commonResponse(answer, ProcessingResponse.response_headers), CommonResponse.header_mutation))).toEqual({
      'svc-cache': 'PASS',
    });
    const mode = decodeMessage(bytesField(answer, ProcessingResponse.mode_override)!);
    // proto3 leaves a zero enum off the wire: NONE (0) shows as absent or explicit 0.
    expect(varintField(mode, ProcessingMode.response_body_mode) ?? BODY_SEND_MODE_NONE).toBe(BODY_SEND_MODE_NONE);
    stream.end();
  });
});
