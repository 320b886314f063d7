import * as grpc from '@grpc/grpc-js';
import http from 'node:http';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { BodySendMode, HeaderSendMode } from '../../src/extproc/messages.js';
import { envoyProfile, startGateway } from '../../src/gateway/index.js';
import { answerEach, continueResponse, headerValue, setHeader, type ScriptedStream } from '../support/fakeProcessor.js';
import { type Rig, delay, header, kinds, send, useRig } from './harness.js';

const rig = useRig({ filter: { messageTimeoutMs: 150 } });
let failClosed: Awaited<ReturnType<Rig['gatewayWith']>>;

beforeAll(async () => {
  failClosed = await rig().gatewayWith({ filter: { messageTimeoutMs: 150, failureModeAllow: false } });
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Answers request_headers with a header the origin would see, then behaves as `then` says. */
const MARK = { header_mutation: { set_headers: [setHeader('svc-cache', 'MISS')] } };

describe('processor unreachable: the stream cannot be opened (docs/ext-proc.md, Timeouts and failure modes)', () => {
  it('fail-open: the request is forwarded untouched', async () => {
    const gateway = await startGateway({ processor: `127.0.0.1:${await closedPort()}`, origin: rig().origin.url, port: 0 });
    try {
      const response = await send(gateway.url, { method: 'POST', body: '{"query":"{a}"}' });

      expect(response.status).toBe(200);
      expect(response.text).toBe('{"data":{}}');
      expect(rig().origin.received.at(-1)?.body.toString()).toBe('{"query":"{a}"}');
      expect(gateway.stats.counters).toMatchObject({
        streams_started: 1,
        stream_msgs_sent: 1,
        streams_failed: 1,
        failure_mode_allowed: 1,
      });
      expect(gateway.stats.lastRequest()?.responseCodeDetails).toBe('via_upstream');
    } finally {
      await gateway.close();
    }
  });

  it('fail-closed: status_on_error with the gRPC code in the details, empty body', async () => {
    const gateway = await startGateway({
      processor: `127.0.0.1:${await closedPort()}`,
      origin: rig().origin.url,
      port: 0,
      filter: { failureModeAllow: false },
    });
    try {
      const response = await send(gateway.url);

      expect(response.status).toBe(500);
      expect(response.text).toBe('');
      expect(gateway.stats.lastRequest()?.responseCodeDetails).toMatch(/^ext_proc_error_gRPC_error_14\{\S*\}$/);
    } finally {
      await gateway.close();
    }
  });
});

describe('message timeout', () => {
  const neverAnswerHeaders = answerEach((request) =>
    request.request === 'request_headers' ? undefined : continueResponse(request),
  );

  it('fail-open: the original request goes to the origin and the stream is reset', async () => {
    rig().processor.use(neverAnswerHeaders);
    const start = { ...rig().gateway.stats.counters };

    const response = await send(rig().gateway.url, { headers: { 'x-client': 'original' } });

    expect(response.status).toBe(200);
    expect(header(response, 'svc-cache')).toBeUndefined();
    expect(rig().origin.received.at(-1)?.headers).toContainEqual(['x-client', 'original']);
    expect(rig().countersSince(start)).toMatchObject({ message_timeouts: 1, failure_mode_allowed: 1, stream_msgs_sent: 1 });
    await delay(20);
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers']);
    expect(rig().lastStream().cancelled).toBe(true);
  });

  it('fail-closed: 504 with an empty body', async () => {
    rig().processor.use(neverAnswerHeaders);
    const originCount = rig().origin.received.length;

    const response = await send(failClosed.url);

    expect(response.status).toBe(504);
    expect(response.text).toBe('');
    expect(rig().origin.received.length).toBe(originCount);
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('ext_proc_error_per-message_timeout_exceeded');
  });

  it('fail-closed before 1.31: 500', async () => {
    const old = await rig().gatewayWith({
      filter: { messageTimeoutMs: 100, failureModeAllow: false, envoy: envoyProfile('1.30') },
    });
    rig().processor.use(neverAnswerHeaders);

    const response = await send(old.url);

    expect(response.status).toBe(500);
  });

  it('an answer the server sends after Envoy cancelled goes nowhere', async () => {
    rig().processor.use(async (stream) => {
      const request = await stream.next();
      await stream.cancelled;
      if (request) stream.send(continueResponse(request, MARK));
    });
    const start = { ...rig().gateway.stats.counters };

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(header(response, 'svc-cache')).toBeUndefined();
    await delay(20);
    expect(rig().lastStream().sentAfterCancel).toBe(1);
    expect(rig().countersSince(start).stream_msgs_received).toBeUndefined();
    rig().processor.use(answerEach((request) => continueResponse(request)));
    expect((await send(rig().gateway.url)).status).toBe(200);
  });
});

describe('the server ends the call', () => {
  it('with an error status, fail-open: the request passes untouched', async () => {
    rig().processor.use(async (stream) => {
      await stream.next();
      stream.fail(grpc.status.INTERNAL, 'boom');
    });
    const start = { ...rig().gateway.stats.counters };

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{}}');
    expect(rig().countersSince(start)).toMatchObject({ streams_failed: 1, failure_mode_allowed: 1 });
  });

  it('with an error status, fail-closed: 500 naming the code and message', async () => {
    rig().processor.use(async (stream) => {
      await stream.next();
      stream.fail(grpc.status.INTERNAL, 'boom now');
    });

    const response = await send(failClosed.url);

    expect(response.status).toBe(500);
    expect(response.text).toBe('');
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('ext_proc_error_gRPC_error_13{boom_now}');
  });

  it('with an error status, fail-closed with status_on_error 502; before 1.36 it is always 500', async () => {
    const current = await rig().gatewayWith({ filter: { failureModeAllow: false, statusOnError: 502 } });
    const older = await rig().gatewayWith({
      filter: { failureModeAllow: false, statusOnError: 502, envoy: envoyProfile('1.35') },
    });
    rig().processor.use(async (stream) => {
      await stream.next();
      stream.fail(grpc.status.UNAVAILABLE, 'down');
    });

    expect((await send(current.url)).status).toBe(502);
    expect((await send(older.url)).status).toBe(500);
  });

  // Filter::onGrpcError through toErrorCode: a status_on_error that is not an error status becomes 500.
  it.each([302, 200, 399, 599])('with status_on_error %i: 4xx and 5xx are kept, anything else is 500', async (status) => {
    const gateway = await rig().gatewayWith({ filter: { failureModeAllow: false, statusOnError: status } });
    rig().processor.use(async (stream) => {
      await stream.next();
      stream.fail(grpc.status.UNAVAILABLE, 'down');
    });

    expect((await send(gateway.url)).status).toBe(status >= 400 ? status : 500);
  });

  it('while Envoy waits for the origin, fail-closed: the origin request is abandoned for a 500', async () => {
    let originAborted = false;
    rig().origin.use((_request, response) => {
      response.on('close', () => (originAborted = !response.writableFinished));
    });
    rig().processor.use(async (stream) => {
      const request = await stream.next();
      if (request) stream.send(continueResponse(request));
      await delay(50);
      stream.fail(grpc.status.INTERNAL, 'late');
    });

    const response = await send(failClosed.url);

    expect(response.status).toBe(500);
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('ext_proc_error_gRPC_error_13{late}');
    await delay(20);
    expect(originAborted).toBe(true);
  });

  it('with OK after answering request_headers: the answer applies and the rest goes on without the processor', async () => {
    rig().processor.use(async (stream) => {
      const request = await stream.next();
      if (request) stream.send(continueResponse(request, MARK));
      stream.end();
    });
    const start = { ...failClosed.stats.counters };

    const response = await send(failClosed.url, { method: 'POST', body: '{"query":"{a}"}' });

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{}}');
    const origin = rig().origin.received.at(-1);
    expect(origin?.headers).toContainEqual(['svc-cache', 'MISS']);
    expect(origin?.body.toString()).toBe('{"query":"{a}"}');
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers']);
    expect(rig().countersSince(start, failClosed)).toMatchObject({ streams_closed: 1 });
  });

  it('with OK after answering request_body: no response_* message follows', async () => {
    rig().processor.use(async (stream) => {
      for (let request = await stream.next(); request; request = await stream.next()) {
        stream.send(continueResponse(request));
        if (request.request === 'request_body') stream.end();
      }
    });

    const response = await send(rig().gateway.url, { method: 'POST', body: '{}' });

    expect(response.status).toBe(200);
    await delay(20);
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'request_body']);
  });

  it('with OK before answering: the request passes untouched, even fail-closed', async () => {
    rig().processor.use(async (stream) => {
      await stream.next();
      stream.end();
    });

    const response = await send(failClosed.url);

    expect(response.status).toBe(200);
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('via_upstream');
  });
});

describe('spurious answers (docs/ext-proc.md, Timeouts and failure modes)', () => {
  const wrongCase = answerEach((request) =>
    request.request === 'request_headers' ? { response_headers: { response: MARK } } : continueResponse(request),
  );

  it('fail-open: ignored, the stream is closed and the request passes untouched', async () => {
    rig().processor.use(wrongCase);
    const start = { ...rig().gateway.stats.counters };

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(header(response, 'svc-cache')).toBeUndefined();
    expect(rig().countersSince(start)).toMatchObject({ spurious_msgs_received: 1, failure_mode_allowed: 1 });
    expect(rig().countersSince(start).stream_msgs_received).toBeUndefined();
  });

  it('fail-closed: 500 spurious_message', async () => {
    rig().processor.use(wrongCase);

    const response = await send(failClosed.url);

    expect(response.status).toBe(500);
    expect(response.text).toBe('');
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('spurious_message');
  });

  it('fail-closed: an empty ProcessingResponse is an unhandled message', async () => {
    rig().processor.use(answerEach(() => ({})));

    const response = await send(failClosed.url);

    expect(response.status).toBe(500);
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('unhandled_message');
  });

  it('fail-closed before 1.35: ignored like fail-open', async () => {
    const old = await rig().gatewayWith({ filter: { failureModeAllow: false, envoy: envoyProfile('1.34') } });
    rig().processor.use(wrongCase);

    const response = await send(old.url);

    expect(response.status).toBe(200);
    expect(old.stats.counters).toMatchObject({ spurious_msgs_received: 1, failure_mode_allowed: 0 });
  });

  it('a body answer while Envoy waits for headers is spurious too', async () => {
    rig().processor.use(answerEach(() => ({ request_body: { response: {} } })));

    const response = await send(failClosed.url, { method: 'POST', body: '{}' });

    expect(response.status).toBe(500);
    expect(failClosed.stats.lastRequest()?.responseCodeDetails).toBe('spurious_message');
  });
});

// Filter::onLocalReply (1.36, runtime guard skip_ext_proc_on_local_reply): a reply Envoy makes itself ends
// external processing, so the server sees no response phase (docs/ext-proc.md, Local replies).
describe('Envoy-generated replies skip ext_proc', () => {
  const REFUSED_TEXT =
    'upstream connect error or disconnect/reset before headers. reset reason: remote connection failure, ' +
    'transport failure reason: delayed connect error: Connection refused';
  const markResponses = answerEach((request) =>
    request.request === 'response_headers'
      ? continueResponse(request, { header_mutation: { set_headers: [setHeader('svc-cache', 'PASS')] } })
      : continueResponse(request),
  );

  /** Runs `markResponses` and hands over the stream, to wait for its close. */
  function recordStreams(): ScriptedStream[] {
    const streams: ScriptedStream[] = [];
    rig().processor.use((stream) => {
      streams.push(stream);
      return markResponses(stream);
    });
    return streams;
  }

  it('origin connection refused: the router 503 reaches the client untouched; the server saw only request_headers', async () => {
    const gateway = await rig().gatewayWith({ origin: `http://127.0.0.1:${await closedPort()}` });
    const streams = recordStreams();

    const response = await send(gateway.url);

    expect(response.status).toBe(503);
    expect(response.text).toBe(REFUSED_TEXT);
    expect(header(response, 'content-type')).toBe('text/plain');
    expect(header(response, 'svc-cache')).toBeUndefined();
    expect(gateway.stats.lastRequest()?.responseCodeDetails).toBe(
      'upstream_reset_before_response_started{remote_connection_failure|delayed_connect_error:_Connection_refused}',
    );
    // The 1.36 sequence a sidecar must expect: request_headers answered with CONTINUE, then nothing but the
    // close (half-close and cancel) once the local reply has gone out (Filter::onDestroy).
    await streams[0]?.cancelled;
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers']);
    expect(stream.sent).toHaveLength(1);
    expect(stream.sent[0]?.request_headers).toBeDefined();
    expect(stream.halfClosed).toBe(true);
    expect(stream.cancelled).toBe(true);
  });

  it('a POST whose request phase was answered ends the same way: no response_* message', async () => {
    const gateway = await rig().gatewayWith({ origin: `http://127.0.0.1:${await closedPort()}` });
    const streams = recordStreams();

    const response = await send(gateway.url, { method: 'POST', body: '{"query":"{a}"}' });

    expect(response.status).toBe(503);
    await streams[0]?.cancelled;
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'request_body']);
  });

  it('route timeout: the 504 upstream request timeout is not shown to the server', async () => {
    const gateway = await rig().gatewayWith({ routeTimeoutMs: 100 });
    rig().origin.use(() => undefined);
    const streams = recordStreams();

    const response = await send(gateway.url);

    expect(response.status).toBe(504);
    expect(response.text).toBe('upstream request timeout');
    expect(header(response, 'svc-cache')).toBeUndefined();
    expect(gateway.stats.lastRequest()?.responseCodeDetails).toBe('upstream_response_timeout');
    await streams[0]?.cancelled;
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers']);
  });

  it('with the request phase skipped, a local reply opens no stream at all', async () => {
    const gateway = await rig().gatewayWith({
      origin: `http://127.0.0.1:${await closedPort()}`,
      filter: {
        processingMode: {
          request_header_mode: HeaderSendMode.SKIP,
          response_header_mode: HeaderSendMode.SEND,
          response_body_mode: BodySendMode.BUFFERED,
        },
      },
    });
    const streamsBefore = rig().processor.streams.length;

    const response = await send(gateway.url);

    expect(response.status).toBe(503);
    expect(rig().processor.streams.length).toBe(streamsBefore);
    expect(gateway.stats.counters.streams_started).toBe(0);
  });

  it('before 1.34 the local reply went through the response phase, which could start the stream', async () => {
    const gateway = await rig().gatewayWith({
      origin: `http://127.0.0.1:${await closedPort()}`,
      filter: {
        envoy: envoyProfile('1.33'),
        processingMode: {
          request_header_mode: HeaderSendMode.SKIP,
          response_header_mode: HeaderSendMode.SEND,
          response_body_mode: BodySendMode.BUFFERED,
        },
      },
    });
    rig().processor.use(markResponses);

    const response = await send(gateway.url);

    expect(response.status).toBe(503);
    expect(header(response, 'svc-cache')).toBe('PASS');
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['response_headers', 'response_body']);
    expect(headerValue(stream.received[0]?.response_headers, ':status')).toBe('503');
    expect(stream.received[1]?.response_body?.body?.toString()).toBe(REFUSED_TEXT);
  });
});

describe('resets', () => {
  function sendExpectingReset(url: string): Promise<string> {
    return send(url).then(
      (response) => `unexpected response ${response.status}`,
      (error: NodeJS.ErrnoException) => error.code ?? error.message,
    );
  }

  it('the origin dropping the connection mid-body resets the client: the held response headers never go out', async () => {
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
      setTimeout(() => response.socket?.destroy(), 20);
    });

    expect(await sendExpectingReset(rig().gateway.url)).toBe('ECONNRESET');
    expect(rig().gateway.stats.lastRequest()).toMatchObject({
      responseCode: 0,
      responseCodeDetails: 'upstream_reset_after_response_started{connection_termination}',
    });
    await delay(20);
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers']);
    expect(rig().lastStream().cancelled).toBe(true);
  });

  it('the route timeout after the response headers resets the client', async () => {
    const gateway = await rig().gatewayWith({ routeTimeoutMs: 100 });
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
    });

    expect(await sendExpectingReset(gateway.url)).toBe('ECONNRESET');
    expect(gateway.stats.lastRequest()?.responseCodeDetails).toBe('upstream_response_timeout');
  });

  it('a client that goes away cancels the Process stream and the origin is never called', async () => {
    rig().processor.use(answerEach(() => undefined));
    const originCount = rig().origin.received.length;
    const streamsBefore = rig().processor.streams.length;

    const aborted = await new Promise<string>((resolve) => {
      const request = http.get(new URL('/graphql', rig().gateway.url), { agent: false });
      request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      const waitForStream = setInterval(() => {
        if ((rig().processor.streams[streamsBefore]?.received.length ?? 0) > 0) {
          clearInterval(waitForStream);
          request.destroy();
        }
      }, 5);
    });

    expect(aborted).toBe('ECONNRESET');
    await delay(30);
    expect(rig().processor.streams[streamsBefore]?.cancelled).toBe(true);
    expect(rig().origin.received.length).toBe(originCount);
    expect(rig().gateway.stats.lastRequest()).toMatchObject({
      responseCode: 0,
      responseCodeDetails: 'downstream_remote_disconnect',
    });
  });
});

describe('what the gateway does not emulate', () => {
  it('refuses a configuration with a streaming body mode', async () => {
    await expect(
      startGateway({
        processor: rig().processor.address,
        origin: rig().origin.url,
        port: 0,
        filter: { processingMode: { request_body_mode: BodySendMode.STREAMED } },
      }),
    ).rejects.toThrow('the gateway plays only NONE and BUFFERED body modes, not STREAMED');
  });

  it('answers 500 when a mode_override asks for a streaming body mode', async () => {
    rig().processor.use(
      answerEach((request) => ({ ...continueResponse(request), mode_override: { request_body_mode: BodySendMode.STREAMED } })),
    );

    const response = await send(rig().gateway.url, { method: 'POST', body: '{}' });

    expect(response.status).toBe(500);
    expect(rig().gateway.stats.lastRequest()?.responseCodeDetails).toBe('the_gateway_does_not_emulate_the_STREAMED_body_mode');
  });
});

// The route's request_headers_to_remove is applied by the router (Router::Filter::decodeHeaders, through
// finalizeRequestHeaders), after ext_proc: the sidecar reads the purge token, the origin never gets it, even
// when the sidecar could not be asked (docs/ext-proc.md, Envoy configuration).
describe('request_headers_to_remove: the purge token never reaches the origin', () => {
  const TOKEN = { 'svc-purge-token': 'secret-token' };

  function originGotToken(): boolean {
    return (rig().origin.received.at(-1)?.headers ?? []).some(([name]) => name === 'svc-purge-token');
  }

  it('the processor sees it; the origin does not', async () => {
    await send(rig().gateway.url, { method: 'POST', body: '{}', headers: TOKEN });

    expect(headerValue(rig().lastStream().received[0]?.request_headers, 'svc-purge-token')).toBe('secret-token');
    expect(originGotToken()).toBe(false);
  });

  it('with the sidecar down (fail-open)', async () => {
    const gateway = await startGateway({ processor: `127.0.0.1:${await closedPort()}`, origin: rig().origin.url, port: 0 });
    try {
      const response = await send(gateway.url, { method: 'POST', body: '{}', headers: TOKEN });

      expect(response.status).toBe(200);
      expect(gateway.stats.counters.failure_mode_allowed).toBe(1);
      expect(originGotToken()).toBe(false);
    } finally {
      await gateway.close();
    }
  });

  it('with the sidecar timing out (fail-open)', async () => {
    rig().processor.use(answerEach(() => undefined));
    const start = { ...rig().gateway.stats.counters };

    const response = await send(rig().gateway.url, { headers: TOKEN });

    expect(response.status).toBe(200);
    expect(rig().countersSince(start)).toMatchObject({ message_timeouts: 1, failure_mode_allowed: 1 });
    expect(originGotToken()).toBe(false);
  });

  it('an empty list removes nothing', async () => {
    const gateway = await rig().gatewayWith({ requestHeadersToRemove: [] });

    await send(gateway.url, { headers: TOKEN });

    expect(rig().origin.received.at(-1)?.headers).toContainEqual(['svc-purge-token', 'secret-token']);
  });
});
