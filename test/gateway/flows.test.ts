import http from 'node:http';
import http2 from 'node:http2';
import { gunzipSync, gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import { BodySendMode, ResponseStatus } from '../../src/extproc/messages.js';
import { startGateway } from '../../src/gateway/index.js';
import {
  answerEach,
  continueResponse,
  headerPairs,
  headerValue,
  setHeader,
} from '../support/fakeProcessor.js';
import { header, jsonOrigin, kinds, send, useRig } from './harness.js';

const QUERY = '{"query":"{ hello }"}';

const rig = useRig({}, { originBody: '{"data":{"hello":"world"}}' });

/** Streams are closed just after the response; give the cancel a moment to reach the server. */
async function settled(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 30));
}

describe('GET', () => {
  it('miss: request_headers (eos), response_headers, response_body; the origin answer reaches the client', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_headers'
          ? continueResponse(request, { header_mutation: { set_headers: [setHeader('svc-cache', 'MISS')] } })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url, {
      path: '/graphql?query=%7Bhello%7D',
      headers: { accept: 'application/json' },
    });

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{"hello":"world"}}');
    expect(header(response, 'svc-cache')).toBe('MISS');
    expect(header(response, 'content-length')).toBe('26');
    expect(header(response, 'server')).toBe('envoy');
    // The production router has suppress_envoy_headers.
    expect(header(response, 'x-envoy-upstream-service-time')).toBeUndefined();

    await settled();
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers', 'response_body']);
    const [requestHeaders, responseHeaders, responseBody] = stream.received;
    expect(requestHeaders?.request_headers?.end_of_stream).toBe(true);
    expect(responseHeaders?.response_headers?.end_of_stream).toBe(false);
    expect(responseBody?.response_body).toEqual({ body: Buffer.from('{"data":{"hello":"world"}}'), end_of_stream: true });
    // Envoy closes with half-close then reset (docs/ext-proc.md, Stream close).
    expect(stream.halfClosed).toBe(true);
    expect(stream.cancelled).toBe(true);
    expect(rig().gateway.stats.lastRequest()).toMatchObject({ responseCode: 200, responseCodeDetails: 'via_upstream' });
  });

  it('shows the request headers as Envoy does: lower case, pseudo-headers first, raw_value only, HCM additions', async () => {
    await send(rig().gateway.url, {
      path: '/graphql?query=x',
      headers: { Accept: 'application/json', 'X-Custom': 'Value', 'X-Envoy-Retry-On': '5xx', 'X-Request-Id': 'client-chosen' },
    });

    const message = rig().lastStream().received[0];
    const pairs = headerPairs(message?.request_headers);
    const names = pairs.map(([name]) => name);
    expect(names.slice(0, 4)).toEqual([':authority', ':path', ':method', ':scheme']);
    expect(pairs.slice(0, 4)).toEqual([
      [':authority', new URL(rig().gateway.url).host],
      [':path', '/graphql?query=x'],
      [':method', 'GET'],
      [':scheme', 'http'],
    ]);
    expect(headerValue(message?.request_headers, 'accept')).toBe('application/json');
    expect(headerValue(message?.request_headers, 'x-custom')).toBe('Value');
    expect(headerValue(message?.request_headers, 'x-forwarded-proto')).toBe('http');
    expect(headerValue(message?.request_headers, 'x-forwarded-for')).toBe('127.0.0.1');
    expect(headerValue(message?.request_headers, 'x-envoy-external-address')).toBe('127.0.0.1');
    // An edge request gets a fresh x-request-id and loses Envoy's control headers.
    expect(headerValue(message?.request_headers, 'x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(names).not.toContain('x-envoy-retry-on');
    expect(names).not.toContain('host');
    expect(names).not.toContain('connection');
    for (const entry of message?.request_headers?.headers?.headers ?? []) {
      expect(entry.value).toBeUndefined();
      expect(entry.raw_value).toBeInstanceOf(Buffer);
    }
    expect(message?.metadata_context).toEqual({});
    expect(message?.protocol_config).toEqual({
      request_body_mode: BodySendMode.BUFFERED,
      response_body_mode: BodySendMode.BUFFERED,
      send_body_without_waiting_for_header_response: false,
    });
    // protocol_config only on the first message; metadata_context on every one.
    for (const later of rig().lastStream().received.slice(1)) {
      expect(later.protocol_config).toBeUndefined();
      expect(later.metadata_context).toEqual({});
    }
    const origin = rig().origin.received.at(-1);
    expect(origin?.headers.find(([name]) => name === 'x-request-id')?.[1]).toBe(
      headerValue(message?.request_headers, 'x-request-id'),
    );
    expect(rig().gateway.stats.lastRequest()?.requestId).toBe(headerValue(message?.request_headers, 'x-request-id'));
  });

  it('hit: an immediate_response to request_headers answers the client and no response_* message follows', async () => {
    rig().processor.use(
      answerEach(() => ({
        immediate_response: {
          status: { code: 200 },
          headers: {
            set_headers: [setHeader('content-type', 'application/json'), setHeader('svc-cache', 'HIT')],
          },
          body: Buffer.from('{"data":{"hello":"cached"}}'),
          details: 'cache hit',
        },
      })),
    );
    const originCount = rig().origin.received.length;

    const response = await send(rig().gateway.url, { path: '/graphql?query=%7Bhello%7D' });

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{"hello":"cached"}}');
    expect(header(response, 'content-type')).toBe('application/json');
    expect(header(response, 'content-length')).toBe('27');
    expect(header(response, 'svc-cache')).toBe('HIT');
    expect(header(response, 'x-envoy-upstream-service-time')).toBeUndefined();
    expect(rig().origin.received.length).toBe(originCount);
    await settled();
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers']);
    expect(rig().lastStream().cancelled).toBe(true);
    expect(rig().gateway.stats.lastRequest()).toMatchObject({ responseCode: 200, responseCodeDetails: 'cache_hit' });
  });

  it('a request with Content-Length: 0 ends the stream on its headers and sends no request_body', async () => {
    await send(rig().gateway.url, { method: 'POST', body: '' });

    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers', 'response_body']);
    expect(stream.received[0]?.request_headers?.end_of_stream).toBe(true);
    expect(headerValue(stream.received[0]?.request_headers, 'content-length')).toBe('0');
  });
});

describe('POST', () => {
  it('miss: request_headers (not eos), then the whole body once with end_of_stream', async () => {
    const response = await send(rig().gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      chunks: ['{"query":', '"{ hello }"}'],
    });

    expect(response.status).toBe(200);
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'request_body', 'response_headers', 'response_body']);
    expect(stream.received[0]?.request_headers?.end_of_stream).toBe(false);
    expect(stream.received[1]?.request_body).toEqual({ body: Buffer.from(QUERY), end_of_stream: true });
    expect(rig().origin.received.at(-1)?.body.toString()).toBe(QUERY);
  });

  it('hit answered on request_body: the origin is never called', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? {
              immediate_response: {
                status: { code: 200 },
                body: Buffer.from('cached'),
                headers: { set_headers: [setHeader('svc-cache', 'HIT')] },
              },
            }
          : continueResponse(request),
      ),
    );
    const originCount = rig().origin.received.length;

    const response = await send(rig().gateway.url, { method: 'POST', body: QUERY });

    expect(response.status).toBe(200);
    expect(response.text).toBe('cached');
    expect(header(response, 'content-type')).toBe('text/plain');
    expect(header(response, 'svc-cache')).toBe('HIT');
    expect(rig().origin.received.length).toBe(originCount);
    await settled();
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'request_body']);
  });

  it('an empty chunked body gives request_headers without eos and an empty request_body with eos', async () => {
    await send(rig().gateway.url, { method: 'POST', chunks: [] });

    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'request_body', 'response_headers', 'response_body']);
    expect(stream.received[0]?.request_headers?.end_of_stream).toBe(false);
    expect(stream.received[1]?.request_body).toEqual({ body: Buffer.alloc(0), end_of_stream: true });
  });
});

describe('request body rewrite (docs/ext-proc.md, Body rewrites and content-length)', () => {
  const expanded = '{"query":"{ hello __typename }"}';

  it('with content-length set to the new length: the origin gets the new body and length', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? continueResponse(request, {
              header_mutation: { set_headers: [setHeader('content-length', String(expanded.length))] },
              body_mutation: { body: Buffer.from(expanded) },
            })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url, { method: 'POST', body: QUERY });

    expect(response.status).toBe(200);
    const origin = rig().origin.received.at(-1);
    expect(origin?.body.toString()).toBe(expanded);
    expect(origin?.headers.find(([name]) => name === 'content-length')?.[1]).toBe(String(expanded.length));
    expect(origin?.headers.some(([name]) => name === 'transfer-encoding')).toBe(false);
  });

  it('without updating content-length: 500 with an empty body, mismatch details, origin not called', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? continueResponse(request, { body_mutation: { body: Buffer.from(expanded) } })
          : continueResponse(request),
      ),
    );
    const originCount = rig().origin.received.length;

    const response = await send(rig().gateway.url, { method: 'POST', body: QUERY });

    expect(response.status).toBe(500);
    expect(response.text).toBe('');
    expect(header(response, 'content-length')).toBe('0');
    expect(header(response, 'content-type')).toBeUndefined();
    expect(rig().origin.received.length).toBe(originCount);
    expect(rig().gateway.stats.lastRequest()?.responseCodeDetails).toBe(
      'mismatch_between_content_length_and_the_length_of_the_mutated_body',
    );
    await settled();
    // The error reply comes from ext_proc itself, whose processing is over: no response phase.
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'request_body']);
  });

  it('with content-length removed: the origin receives the new body chunked', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? continueResponse(request, {
              header_mutation: { remove_headers: ['content-length'] },
              body_mutation: { body: Buffer.from(expanded) },
            })
          : continueResponse(request),
      ),
    );

    await send(rig().gateway.url, { method: 'POST', body: QUERY });

    const origin = rig().origin.received.at(-1);
    expect(origin?.body.toString()).toBe(expanded);
    expect(origin?.headers.find(([name]) => name === 'transfer-encoding')?.[1]).toBe('chunked');
    expect(origin?.headers.some(([name]) => name === 'content-length')).toBe(false);
  });

  it('clear_body counts as length 0 against content-length', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? continueResponse(request, {
              header_mutation: { set_headers: [setHeader('content-length', '0')] },
              body_mutation: { clear_body: true },
            })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url, { method: 'POST', body: QUERY });

    expect(response.status).toBe(200);
    expect(rig().origin.received.at(-1)?.body.length).toBe(0);
  });

  it('CONTINUE_AND_REPLACE on request_headers replaces the body, drops content-length and ends the request phase', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_headers'
          ? continueResponse(request, {
              status: ResponseStatus.CONTINUE_AND_REPLACE,
              body_mutation: { body: Buffer.from(expanded) },
            })
          : continueResponse(request),
      ),
    );

    await send(rig().gateway.url, { method: 'POST', body: QUERY });

    const origin = rig().origin.received.at(-1);
    expect(origin?.body.toString()).toBe(expanded);
    expect(origin?.headers.find(([name]) => name === 'transfer-encoding')?.[1]).toBe('chunked');
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers', 'response_body']);
  });

  it('header mutations in the request_body answer still reach the origin: the headers are held (docs/ext-proc.md, Message order)', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? continueResponse(request, { header_mutation: { set_headers: [setHeader('x-from-body-answer', 'yes')] } })
          : continueResponse(request),
      ),
    );

    await send(rig().gateway.url, { method: 'POST', body: QUERY });

    expect(rig().origin.received.at(-1)?.headers).toContainEqual(['x-from-body-answer', 'yes']);
  });
});

describe('response phase', () => {
  it('response rewrite with a matching content-length', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_body'
          ? continueResponse(request, {
              header_mutation: { set_headers: [setHeader('content-length', '13')] },
              body_mutation: { body: Buffer.from('{"data":null}') },
            })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":null}');
    expect(header(response, 'content-length')).toBe('13');
  });

  it('response rewrite keeping the origin content-length: 500 mismatch, empty body', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_body'
          ? continueResponse(request, { body_mutation: { body: Buffer.from('{"data":null}') } })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(500);
    expect(response.text).toBe('');
    expect(rig().gateway.stats.lastRequest()?.responseCodeDetails).toBe(
      'mismatch_between_content_length_and_the_length_of_the_mutated_body',
    );
  });

  it('response rewrite of a chunked origin body needs no content-length', async () => {
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"data":');
      response.end('{"hello":"world"}}');
    });
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_body'
          ? continueResponse(request, { body_mutation: { body: Buffer.from('{"data":{}}') } })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{}}');
    expect(header(response, 'transfer-encoding')).toBe('chunked');
    const stream = rig().lastStream();
    expect(headerValue(stream.received[1]?.response_headers, 'transfer-encoding')).toBe('chunked');
    expect(headerValue(stream.received[1]?.response_headers, ':status')).toBe('200');
  });

  it('a chunked empty origin body gives response_headers without eos and an empty response_body with eos', async () => {
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      response.end();
    });

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(response.text).toBe('');
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers', 'response_body']);
    expect(stream.received[1]?.response_headers?.end_of_stream).toBe(false);
    expect(stream.received[2]?.response_body).toEqual({ body: Buffer.alloc(0), end_of_stream: true });
  });

  it.each([204, 304])('%i: response_headers with eos and no response_body', async (status) => {
    rig().origin.use((_request, response) => {
      response.writeHead(status, { etag: '"v1"' });
      response.end();
    });

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(status);
    await settled();
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers']);
    expect(stream.received[1]?.response_headers?.end_of_stream).toBe(true);
    expect(headerValue(stream.received[1]?.response_headers, ':status')).toBe(String(status));
    // Nothing else can be asked once the last answer arrived: the stream is closed right away.
    expect(stream.cancelled).toBe(true);
  });

  it('Content-Length: 0 from the origin ends the stream on the headers', async () => {
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-length': '0' });
      response.end();
    });

    await send(rig().gateway.url);

    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers']);
    expect(stream.received[1]?.response_headers?.end_of_stream).toBe(true);
  });

  it('origin 5xx goes through the response phase like any origin response', async () => {
    rig().origin.use(jsonOrigin('{"errors":[{"message":"boom"}]}', 502));

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(502);
    expect(response.text).toBe('{"errors":[{"message":"boom"}]}');
    const stream = rig().lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers', 'response_body']);
    expect(headerValue(stream.received[1]?.response_headers, ':status')).toBe('502');
    expect(rig().gateway.stats.lastRequest()?.responseCodeDetails).toBe('via_upstream');
  });

  it('a gzip origin body reaches the processor and the client as the compressed bytes (docs/ext-proc.md, Body rewrites and content-length)', async () => {
    const compressed = gzipSync('{"data":{"hello":"world"}}');
    rig().origin.use((_request, response) => {
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': compressed.length,
      });
      response.end(compressed);
    });

    const response = await send(rig().gateway.url, { headers: { 'accept-encoding': 'gzip' } });

    expect(header(response, 'content-encoding')).toBe('gzip');
    expect(gunzipSync(response.body).toString()).toBe('{"data":{"hello":"world"}}');
    const stream = rig().lastStream();
    expect(headerValue(stream.received[0]?.request_headers, 'accept-encoding')).toBe('gzip');
    expect(headerValue(stream.received[1]?.response_headers, 'content-encoding')).toBe('gzip');
    expect(stream.received[2]?.response_body?.body).toEqual(compressed);
  });

  it('hop-by-hop origin headers are shown to the processor but never reach the client', async () => {
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-length': '2', 'keep-alive': 'timeout=5', 'proxy-connection': 'x', server: 'origin' });
      response.end('ok');
    });

    const response = await send(rig().gateway.url);

    expect(response.text).toBe('ok');
    expect(header(response, 'proxy-connection')).toBeUndefined();
    expect(header(response, 'server')).toBe('envoy');
    expect(headerValue(rig().lastStream().received[1]?.response_headers, 'server')).toBe('origin');
  });
});

describe('connection manager details', () => {
  it('HEAD: the origin answer ends on its headers; an immediate response carries no body nor length', async () => {
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '26' });
      response.end();
    });

    const fromOrigin = await send(rig().gateway.url, { method: 'HEAD' });

    expect(fromOrigin.status).toBe(200);
    expect(header(fromOrigin, 'content-length')).toBe('26');
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers']);
    expect(rig().lastStream().received[1]?.response_headers?.end_of_stream).toBe(true);

    rig().processor.use(answerEach(() => ({ immediate_response: { status: { code: 200 }, body: Buffer.from('cached') } })));
    const immediate = await send(rig().gateway.url, { method: 'HEAD' });

    expect(immediate.status).toBe(200);
    expect(header(immediate, 'content-length')).toBeUndefined();
    expect(header(immediate, 'content-type')).toBeUndefined();
  });

  it('Expect: 100-continue is answered by the gateway and not shown to the processor or the origin', async () => {
    await send(rig().gateway.url, { method: 'POST', body: QUERY, headers: { expect: '100-continue' } });

    expect(headerValue(rig().lastStream().received[0]?.request_headers, 'expect')).toBeUndefined();
    expect(rig().origin.received.at(-1)?.headers.some(([name]) => name === 'expect')).toBe(false);
    expect(rig().origin.received.at(-1)?.body.toString()).toBe(QUERY);
  });

  it('keep-alive clients reuse their connection across exchanges', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    agent.on('free', (socket) => sockets.add(socket));
    try {
      const first = await send(rig().gateway.url, { agent });
      const second = await send(rig().gateway.url, { method: 'POST', body: QUERY, agent });

      expect([first.status, second.status]).toEqual([200, 200]);
      expect(header(second, 'connection')).toBe('keep-alive');
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

});

describe('closing the gateway', () => {
  it('ends idle keep-alive connections, over HTTP/1.1 and HTTP/2, instead of waiting for the clients', async () => {
    const gateway = await startGateway({ processor: rig().processor.address, origin: rig().origin.url, port: 0 });
    const agent = new http.Agent({ keepAlive: true });
    const session = http2.connect(gateway.url);
    const connected = new Promise<void>((resolve) => session.once('connect', () => resolve()));
    const closedByGateway = new Promise<void>((resolve) => session.once('close', () => resolve()));
    session.on('error', () => undefined);
    try {
      expect((await send(gateway.url, { agent })).status).toBe(200);
      await connected;

      await gateway.close();

      await closedByGateway;
    } finally {
      agent.destroy();
      session.destroy();
    }
  });
});

// Router::Filter::decodeHeaders and onUpstreamHeaders: with suppress_envoy_headers (production) the router adds
// no x-envoy-* header either way; without it, the origin learns its timeout and the client the service time.
describe('suppress_envoy_headers (docs/ext-proc.md, Envoy configuration)', () => {
  it('production: neither x-envoy-expected-rq-timeout-ms upstream nor x-envoy-upstream-service-time downstream', async () => {
    const response = await send(rig().gateway.url);

    const names = (rig().origin.received.at(-1)?.headers ?? []).map(([name]) => name);
    expect(names).not.toContain('x-envoy-expected-rq-timeout-ms');
    expect(header(response, 'x-envoy-upstream-service-time')).toBeUndefined();
    expect(headerValue(rig().lastStream().received[1]?.response_headers, 'x-envoy-upstream-service-time')).toBeUndefined();
  });

  it('off: the router tells the origin its timeout and the processor and client the service time', async () => {
    const gateway = await rig().gatewayWith({ suppressEnvoyHeaders: false });

    const response = await send(gateway.url);

    expect(rig().origin.received.at(-1)?.headers).toContainEqual(['x-envoy-expected-rq-timeout-ms', '30000']);
    expect(header(response, 'x-envoy-upstream-service-time')).toMatch(/^\d+$/);
    expect(headerValue(rig().lastStream().received[1]?.response_headers, 'x-envoy-upstream-service-time')).toMatch(/^\d+$/);
  });
});

// ConnectionManagerUtility::mutateRequestHeaders, as the production listener configures it.
describe('use_remote_address and xff_num_trusted_hops (docs/ext-proc.md, Envoy configuration)', () => {
  const CLIENT_HEADERS = {
    'x-forwarded-for': '203.0.113.9',
    'x-forwarded-proto': 'https',
    'x-request-id': 'client-chosen',
    'x-envoy-retry-on': '5xx',
    'x-envoy-downstream-service-cluster': 'spoofed',
  };

  function seenByProcessor(name: string): string | undefined {
    return headerValue(rig().lastStream().received[0]?.request_headers, name);
  }

  it('production (true, 0 hops): the peer is appended to x-forwarded-for and is the external address', async () => {
    await send(rig().gateway.url, { headers: CLIENT_HEADERS });

    expect(seenByProcessor('x-forwarded-for')).toBe('203.0.113.9,127.0.0.1');
    expect(seenByProcessor('x-envoy-external-address')).toBe('127.0.0.1');
    expect(seenByProcessor('x-forwarded-proto')).toBe('http');
    expect(seenByProcessor('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(seenByProcessor('x-envoy-retry-on')).toBeUndefined();
    expect(seenByProcessor('x-envoy-downstream-service-cluster')).toBeUndefined();
    expect(rig().origin.received.at(-1)?.headers).toContainEqual(['x-forwarded-for', '203.0.113.9,127.0.0.1']);
  });

  it('one trusted hop: the client is the last x-forwarded-for entry that hop wrote', async () => {
    const gateway = await rig().gatewayWith({ xffNumTrustedHops: 1 });

    await send(gateway.url, { headers: { ...CLIENT_HEADERS, 'x-forwarded-for': '198.51.100.1, 203.0.113.9' } });

    expect(seenByProcessor('x-forwarded-for')).toBe('198.51.100.1, 203.0.113.9,127.0.0.1');
    expect(seenByProcessor('x-envoy-external-address')).toBe('203.0.113.9');
    // A trusted hop's x-forwarded-proto is kept.
    expect(seenByProcessor('x-forwarded-proto')).toBe('https');
  });

  it('off: x-forwarded-for and a non-empty x-request-id pass through; no external address', async () => {
    const gateway = await rig().gatewayWith({ useRemoteAddress: false });

    await send(gateway.url, { headers: CLIENT_HEADERS });

    expect(seenByProcessor('x-forwarded-for')).toBe('203.0.113.9');
    expect(seenByProcessor('x-envoy-external-address')).toBeUndefined();
    expect(seenByProcessor('x-request-id')).toBe('client-chosen');
    expect(seenByProcessor('x-forwarded-proto')).toBe('https');
    // Not internal either: the router's control headers are still dropped, the edge-only ones are not.
    expect(seenByProcessor('x-envoy-retry-on')).toBeUndefined();
    expect(seenByProcessor('x-envoy-downstream-service-cluster')).toBe('spoofed');
    expect(gateway.stats.lastRequest()?.requestId).toBe('client-chosen');
  });

  it('off, without x-request-id: one is generated', async () => {
    const gateway = await rig().gatewayWith({ useRemoteAddress: false });

    await send(gateway.url);

    expect(seenByProcessor('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('immediate_response in the response phase (docs/ext-proc.md, Immediate responses)', () => {
  const STORED = '{"data":{"hello":"stored"}}';
  const replacement = {
    immediate_response: {
      status: { code: 200 },
      headers: { set_headers: [setHeader('content-type', 'application/json'), setHeader('svc-cache', 'HIT'), setHeader('x-envoy-peer', 'dropped')] },
      body: Buffer.from(STORED),
    },
  };

  beforeEach(() => {
    rig().origin.use((_request, response) => {
      response.writeHead(503, { 'content-type': 'text/html', 'set-cookie': 'origin=1', 'content-length': '13' });
      response.end('<h1>down</h1>');
    });
  });

  it.each(['response_headers', 'response_body'])('answering %s: the reply replaces the held origin response whole', async (phase) => {
    rig().processor.use(answerEach((request) => (request.request === phase ? replacement : continueResponse(request))));

    const response = await send(rig().gateway.url, { method: 'POST', body: QUERY });

    expect([response.status, response.text]).toEqual([200, STORED]);
    // Sent straight to the client in place of the origin's headers, which it shares nothing with;
    // its own headers still pass the filter's mutation rules.
    // (`date` and `connection: close`, for a client without keep-alive, are Node's.)
    expect(response.headers.filter(([name]) => name !== 'date' && name !== 'connection')).toEqual([
      ['content-type', 'application/json'],
      ['svc-cache', 'HIT'],
      ['content-length', String(STORED.length)],
      ['server', 'envoy'],
    ]);
    await settled();
    const expected = phase === 'response_headers' ? ['request_headers', 'request_body', 'response_headers'] : ['request_headers', 'request_body', 'response_headers', 'response_body'];
    expect(kinds(rig().lastStream().received)).toEqual(expected);
    expect(rig().gateway.stats.lastRequest()).toMatchObject({ responseCode: 200 });
  });
});
