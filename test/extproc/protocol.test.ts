import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProcessingRequest } from '../../src/extproc/messages.js';
import { BodySendMode } from '../../src/extproc/messages.js';
import { PROCESS_METHOD_PATH } from '../../src/extproc/protocol.js';
import type { Sidecar } from '../../src/sidecar/sidecar.js';
import {
  connectExtProc,
  envoyPostHeaders,
  headerMap,
  ORIGIN_BODY,
  QUERY_BODY,
  setHeaders,
  type ExtProcTestClient,
} from '../support/extprocClient.js';
import { startTestSidecar } from '../support/sidecar.js';

/** The ext_proc service driven directly with the messages Envoy sends (docs/ext-proc.md, Message order). */

/** As Envoy 1.36 sends it: Envoy-added headers, and protocol_config on the first message. */
function postHeaders(body: Buffer): ProcessingRequest {
  return {
    ...envoyPostHeaders(body, { 'accept-encoding': 'gzip', 'x-request-id': 'r-1' }),
    protocol_config: { request_body_mode: BodySendMode.BUFFERED, response_body_mode: BodySendMode.BUFFERED },
  };
}

const responseHeaders = (status: number, extra: Record<string, string> = {}): ProcessingRequest => ({
  response_headers: {
    headers: headerMap({
      ':status': String(status),
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(ORIGIN_BODY.length),
      'x-envoy-upstream-service-time': '3',
      ...extra,
    }),
    end_of_stream: false,
  },
});

describe('ext_proc protocol', () => {
  let sidecar: Sidecar;
  let client: ExtProcTestClient;

  beforeAll(async () => {
    sidecar = await startTestSidecar();
    client = connectExtProc(sidecar.grpcPort);
  });
  afterAll(async () => {
    client.close();
    await sidecar.close(1000);
  });
  beforeEach(async () => {
    await sidecar.store.invalidateAll();
  });

  it('serves the Process method at Envoy\'s path', () => {
    expect(PROCESS_METHOD_PATH).toBe('/envoy.service.ext_proc.v3.ExternalProcessor/Process');
  });

  it('answers a POST miss message by message, then a hit with an immediate response', async () => {
    const miss = client.open();
    const headersAnswer = await miss.exchange(postHeaders(QUERY_BODY));
    expect(headersAnswer).toEqual({ request_headers: { response: {} }, response: 'request_headers' });

    const bodyAnswer = await miss.exchange({ request_body: { body: QUERY_BODY, end_of_stream: true } });
    expect(bodyAnswer.response).toBe('request_body');
    expect(bodyAnswer.request_body?.response?.header_mutation?.remove_headers).toEqual(['accept-encoding']);
    expect(bodyAnswer.request_body?.response?.body_mutation).toBeUndefined();

    const responseHeadersAnswer = await miss.exchange(responseHeaders(200));
    expect(responseHeadersAnswer).toEqual({ response_headers: { response: {} }, response: 'response_headers' });

    const responseBodyAnswer = await miss.exchange({ response_body: { body: ORIGIN_BODY, end_of_stream: true } });
    expect(responseBodyAnswer.response).toBe('response_body');
    expect(setHeaders(responseBodyAnswer.response_body?.response?.header_mutation)).toEqual({ 'svc-cache': 'MISS' });
    expect(responseBodyAnswer.response_body?.response?.body_mutation).toBeUndefined();
    miss.halfClose();
    expect((await miss.status).code).toBe(grpc.status.OK);

    const hit = client.open();
    await hit.exchange(postHeaders(QUERY_BODY));
    const immediate = await hit.exchange({ request_body: { body: QUERY_BODY, end_of_stream: true } });
    expect(immediate.response).toBe('immediate_response');
    expect(immediate.immediate_response?.status).toEqual({ code: 200 });
    expect(immediate.immediate_response?.body).toEqual(ORIGIN_BODY);
    const hitHeaders = setHeaders(immediate.immediate_response?.headers);
    expect(hitHeaders).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'svc-cache': 'HIT',
      age: expect.stringMatching(/^\d+$/),
    });
    // The exchange is complete: the server ends the call before Envoy's half-close and cancel.
    expect((await hit.status).code).toBe(grpc.status.OK);
    hit.cancel();
  });

  it('decides a GET on its headers alone (no request_body message follows)', async () => {
    const path = `/graphql?query=${encodeURIComponent('{ todos { id title } }')}`;
    const get: ProcessingRequest = {
      request_headers: {
        headers: headerMap({ ':method': 'GET', ':path': path, ':authority': 'example.test', ':scheme': 'http', 'accept-encoding': 'gzip' }),
        end_of_stream: true,
      },
    };
    const miss = client.open();
    const answer = await miss.exchange(get);
    expect(answer.response).toBe('request_headers');
    expect(answer.request_headers?.response?.header_mutation?.remove_headers).toEqual(['accept-encoding']);
    expect(answer.mode_override).toBeUndefined();
    await miss.exchange(responseHeaders(200));
    await miss.exchange({ response_body: { body: ORIGIN_BODY, end_of_stream: true } });
    miss.halfClose();
    await miss.status;

    const hit = client.open();
    const immediate = await hit.exchange(get);
    expect(immediate.response).toBe('immediate_response');
    expect(immediate.immediate_response?.body).toEqual(ORIGIN_BODY);
    hit.halfClose();
  });

  it('passes a request it does not cache, skipping the response body with a mode override', async () => {
    // Introspection no rule names: passed, and nothing in the answer to read.
    const body = Buffer.from(JSON.stringify({ query: '{ __schema { queryType { name } } }' }));
    const stream = client.open();
    await stream.exchange(postHeaders(body));
    const bodyAnswer = await stream.exchange({ request_body: { body, end_of_stream: true } });
    expect(bodyAnswer).toEqual({ request_body: { response: {} }, response: 'request_body' });
    const headersAnswer = await stream.exchange(responseHeaders(200));
    expect(setHeaders(headersAnswer.response_headers?.response?.header_mutation)).toEqual({ 'svc-cache': 'PASS' });
    // Header modes left out mean "unchanged" to Envoy >= 1.34 (docs/ext-proc.md, Mode override).
    expect(headersAnswer.mode_override).toEqual({ response_body_mode: BodySendMode.NONE });
    // Nothing more needs an answer, so the server ends the call cleanly: an Envoy without
    // allow_mode_override, which would still send the body, then passes it on untouched.
    expect((await stream.status).code).toBe(grpc.status.OK);
  });

  it('passes a request it can tell on headers alone, skipping both bodies', async () => {
    const stream = client.open();
    const answer = await stream.exchange({
      request_headers: {
        headers: headerMap({ ':method': 'PUT', ':path': '/graphql', ':authority': 'a', ':scheme': 'http' }),
        end_of_stream: false,
      },
    });
    expect(answer.mode_override).toEqual({
      request_body_mode: BodySendMode.NONE,
      response_body_mode: BodySendMode.NONE,
    });
    stream.halfClose();
  });

  it.each([
    // Accept alone decides nothing at the headers any more (README, HIT, MISS, PASS): only paths and upgrades.
    ['a request for a path that is no endpoint', { ':path': '/events/stream' }],
    ['a WebSocket upgrade', { upgrade: 'websocket', connection: 'upgrade' }],
  ])('lets %s stream through untouched, neither body buffered', async (_name, headers) => {
    const stream = client.open();
    const answer = await stream.exchange(envoyPostHeaders(QUERY_BODY, headers));
    expect(answer.request_headers).toEqual({ response: {} });
    expect(answer.mode_override).toEqual({
      request_body_mode: BodySendMode.NONE,
      response_body_mode: BodySendMode.NONE,
    });
    const responseAnswer = await stream.exchange({
      response_headers: { headers: headerMap({ ':status': '200', 'content-type': 'text/event-stream' }), end_of_stream: false },
    });
    expect(setHeaders(responseAnswer.response_headers?.response?.header_mutation)).toEqual({ 'svc-cache': 'PASS' });
    expect((await stream.status).code).toBe(grpc.status.OK);
  });

  it('copes with a stream that starts at response_headers (an Envoy local reply)', async () => {
    const stream = client.open();
    const answer = await stream.exchange(responseHeaders(503));
    expect(answer.response).toBe('response_headers');
    expect(setHeaders(answer.response_headers?.response?.header_mutation)).toEqual({ 'svc-cache': 'PASS' });
    stream.halfClose();
    expect((await stream.status).code).toBe(grpc.status.OK);
  });

  it('passes Envoy\'s own 413 that replaces a request body it could not buffer', async () => {
    const stream = client.open();
    await stream.exchange(postHeaders(QUERY_BODY));
    const answer = await stream.exchange({
      response_headers: { headers: headerMap({ ':status': '413', 'content-type': 'text/plain' }), end_of_stream: false },
    });
    expect(answer.response).toBe('response_headers');
    expect(setHeaders(answer.response_headers?.response?.header_mutation)).toEqual({ 'svc-cache': 'PASS' });
    expect((await stream.status).code).toBe(grpc.status.OK);
  });

  it('does not store a non-200 origin answer', async () => {
    const stream = client.open();
    await stream.exchange(postHeaders(QUERY_BODY));
    await stream.exchange({ request_body: { body: QUERY_BODY, end_of_stream: true } });
    const answer = await stream.exchange(responseHeaders(500));
    expect(setHeaders(answer.response_headers?.response?.header_mutation)).toEqual({ 'svc-cache': 'PASS' });
    stream.halfClose();
    const again = client.open();
    await again.exchange(postHeaders(QUERY_BODY));
    const bodyAnswer = await again.exchange({ request_body: { body: QUERY_BODY, end_of_stream: true } });
    expect(bodyAnswer.response).toBe('request_body');
    again.cancel();
  });

  it('ends a stream that breaks the protocol with INVALID_ARGUMENT and keeps serving others', async () => {
    const outOfOrder = client.open();
    outOfOrder.send({ request_body: { body: QUERY_BODY, end_of_stream: true } });
    const status = await outOfOrder.status;
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toBe('unexpected request_body while start');

    const empty = client.open();
    empty.send({});
    expect((await empty.status).code).toBe(grpc.status.INVALID_ARGUMENT);

    const twice = client.open();
    await twice.exchange(postHeaders(QUERY_BODY));
    twice.send(postHeaders(QUERY_BODY));
    expect((await twice.status).details).toBe('unexpected request_headers while awaiting-request-body');

    const noMethod = client.open();
    noMethod.send({ request_headers: { headers: headerMap({ ':path': '/graphql' }), end_of_stream: true } });
    expect((await noMethod.status).details).toBe('request_headers without :method or :path');

    const healthy = client.open();
    expect((await healthy.exchange(postHeaders(QUERY_BODY))).response).toBe('request_headers');
    healthy.halfClose();
  });

  it('ends a stream whose bytes are not a ProcessingRequest with an error status and keeps serving', async () => {
    const raw = new grpc.Client(`127.0.0.1:${sidecar.grpcPort}`, grpc.credentials.createInsecure());
    const call = raw.makeBidiStreamRequest(
      PROCESS_METHOD_PATH,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
    );
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => undefined);
    call.write(Buffer.from([0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]));
    expect((await status).code).not.toBe(grpc.status.OK);
    raw.close();

    const healthy = client.open();
    expect((await healthy.exchange(postHeaders(QUERY_BODY))).response).toBe('request_headers');
    healthy.halfClose();
  });

  it('reads header values from `value` when an older Envoy sends no raw_value', async () => {
    const stream = client.open();
    const answer = await stream.exchange({
      request_headers: {
        headers: {
          headers: [
            { key: ':method', value: 'GET' },
            { key: ':path', value: `/graphql?query=${encodeURIComponent('mutation { addTodo(title: "x") { id } }')}` },
          ],
        },
        end_of_stream: true,
      },
    });
    expect(answer.immediate_response?.status).toEqual({ code: 405 });
    stream.halfClose();
  });

  it('does not answer in observability mode', async () => {
    const stream = client.open();
    stream.send({ ...postHeaders(QUERY_BODY), observability_mode: true });
    stream.halfClose();
    const status = await stream.status;
    expect(status.code).toBe(grpc.status.OK);
    await expect(stream.next()).rejects.toThrow();
  });
});
