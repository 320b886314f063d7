import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { BodySendMode, HeaderSendMode } from '../../src/extproc/messages.js';
import { envoyProfile } from '../../src/gateway/index.js';
import { answerEach, continueResponse, headerValue, setHeader, type ScriptedStream } from '../support/fakeProcessor.js';
import { type Rig, delay, header, jsonOrigin, kinds, send, useRig } from './harness.js';

const rig = useRig();

const SKIP_THE_REST = {
  request_body_mode: BodySendMode.NONE,
  response_header_mode: HeaderSendMode.SKIP,
  response_body_mode: BodySendMode.NONE,
};

describe('mode_override (docs/ext-proc.md, Mode override)', () => {
  it('at request_headers skips the request body and the whole response phase', async () => {
    rig().processor.use(
      answerEach((request) => ({ ...continueResponse(request), mode_override: SKIP_THE_REST })),
    );

    const response = await send(rig().gateway.url, { method: 'POST', body: '{"query":"mutation { x }"}' });

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{}}');
    expect(rig().origin.received.at(-1)?.body.toString()).toBe('{"query":"mutation { x }"}');
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers']);
  });

  // 1.36 has no close-on-last-answer (that came with 1.37): the stream stays open while the origin works and
  // is closed by Filter::onDestroy when the HTTP stream ends (docs/ext-proc.md, Stream close).
  it('leaves the stream open until the HTTP stream ends, though nothing more will be asked', async () => {
    let stream: ScriptedStream | undefined;
    rig().processor.use((scripted) => {
      stream = scripted;
      return answerEach((request) => ({ ...continueResponse(request), mode_override: SKIP_THE_REST }))(scripted);
    });
    let originReached!: () => void;
    const reached = new Promise<void>((resolve) => (originReached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    rig().origin.use((request, response) => {
      originReached();
      void released.then(() => jsonOrigin('{"data":{}}')(request, response));
    });

    const pending = send(rig().gateway.url);
    await reached;

    expect(rig().lastStream().halfClosed).toBe(false);
    expect(rig().lastStream().cancelled).toBe(false);
    release();
    expect((await pending).status).toBe(200);
    await stream?.cancelled;
    expect(rig().lastStream()).toMatchObject({ halfClosed: true, cancelled: true });
  });

  it('is ignored without allow_mode_override', async () => {
    const strict = await rig().gatewayWith({ filter: { allowModeOverride: false } });
    rig().processor.use(
      answerEach((request) => ({ ...continueResponse(request), mode_override: SKIP_THE_REST })),
    );

    await send(strict.url, { method: 'POST', body: '{}' });

    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'request_body', 'response_headers', 'response_body']);
  });

  it('is ignored in a body answer', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? { ...continueResponse(request), mode_override: SKIP_THE_REST }
          : continueResponse(request),
      ),
    );

    await send(rig().gateway.url, { method: 'POST', body: '{}' });

    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'request_body', 'response_headers', 'response_body']);
  });

  it('takes body modes literally: leaving request_body_mode out means NONE', async () => {
    rig().processor.use(
      answerEach((request) => ({
        ...continueResponse(request),
        ...(request.request === 'request_headers' ? { mode_override: { response_body_mode: BodySendMode.BUFFERED } } : {}),
      })),
    );

    await send(rig().gateway.url, { method: 'POST', body: '{}' });

    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers', 'response_body']);
  });

  it.each([
    ['1.36: DEFAULT keeps the configured SKIP', '1.36', ['request_headers']],
    ['1.33: the override replaces the mode and DEFAULT means SEND', '1.33', ['request_headers', 'response_headers']],
  ])('%s', async (_label, version, expected) => {
    const gateway = await rig().gatewayWith({
      filter: {
        processingMode: {
          request_header_mode: HeaderSendMode.SEND,
          response_header_mode: HeaderSendMode.SKIP,
          request_body_mode: BodySendMode.NONE,
          response_body_mode: BodySendMode.NONE,
        },
        envoy: envoyProfile(version),
      },
    });
    rig().processor.use(
      answerEach((request) => ({
        ...continueResponse(request),
        mode_override: { request_header_mode: HeaderSendMode.DEFAULT, response_header_mode: HeaderSendMode.DEFAULT },
      })),
    );

    await send(gateway.url);

    expect(kinds(rig().lastStream().received)).toEqual(expected);
    expect(rig().lastStream().received[0]?.protocol_config === undefined).toBe(version === '1.33');
  });

  it('outside allowed_override_modes is ignored', async () => {
    const gateway = await rig().gatewayWith({
      filter: { allowedOverrideModes: [{ response_header_mode: HeaderSendMode.SKIP }] },
    });
    rig().processor.use(
      answerEach((request) => ({ ...continueResponse(request), mode_override: SKIP_THE_REST })),
    );

    await send(gateway.url);

    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers', 'response_body']);
  });

  it('response_body_mode NONE at response_headers lets text/event-stream stream to the client', async () => {
    let releaseSecondEvent: () => void = () => undefined;
    const secondEventMayGo = new Promise<void>((resolve) => (releaseSecondEvent = resolve));
    rig().origin.use((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: one\n\n');
      void secondEventMayGo.then(() => response.end('data: two\n\n'));
    });
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_headers' &&
        headerValue(request.response_headers, 'content-type') === 'text/event-stream'
          ? { ...continueResponse(request), mode_override: { response_body_mode: BodySendMode.NONE } }
          : continueResponse(request),
      ),
    );

    const received = await new Promise<string[]>((resolve, reject) => {
      const events: string[] = [];
      const url = new URL('/events', rig().gateway.url);
      http
        .get(url, { agent: false }, (response) => {
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            events.push(chunk);
            // The second event only exists once the first one has reached the client.
            if (events.length === 1) releaseSecondEvent();
          });
          response.on('end', () => resolve(events));
        })
        .on('error', reject);
    });

    expect(received.join('')).toBe('data: one\n\ndata: two\n\n');
    expect(received[0]).toBe('data: one\n\n');
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers']);
  });
});

describe('override_message_timeout (docs/ext-proc.md, Timeouts and failure modes)', () => {
  /** Answers request_headers late, after sending the given timeout overrides first. */
  function lateAnswer(overridesMs: number[], answerAfterMs: number): void {
    rig().processor.use(async (stream) => {
      for (let request = await stream.next(); request; request = await stream.next()) {
        if (request.request !== 'request_headers') {
          stream.send(continueResponse(request));
          continue;
        }
        for (const ms of overridesMs) {
          stream.send({ override_message_timeout: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } });
        }
        await delay(answerAfterMs);
        stream.send(continueResponse(request, { header_mutation: { set_headers: [setHeader('x-late', 'applied')] } }));
      }
    });
  }

  let gateway: Awaited<ReturnType<Rig['gatewayWith']>>;
  beforeAll(async () => {
    gateway = await rig().gatewayWith({ filter: { messageTimeoutMs: 150, maxMessageTimeoutMs: 1000 } });
  });

  it('within max_message_timeout extends the wait for the answer', async () => {
    lateAnswer([600], 300);
    const start = { ...gateway.stats.counters };

    const response = await send(gateway.url);

    expect(response.status).toBe(200);
    expect(rig().origin.received.at(-1)?.headers).toContainEqual(['x-late', 'applied']);
    expect(rig().countersSince(start, gateway)).toMatchObject({ override_message_timeout_received: 1 });
    expect(rig().countersSince(start, gateway).message_timeouts).toBeUndefined();
  });

  it('over max_message_timeout is ignored: the original timer fires and the request fails open', async () => {
    lateAnswer([5000], 300);
    const start = { ...gateway.stats.counters };

    const response = await send(gateway.url);

    expect(response.status).toBe(200);
    expect(rig().origin.received.at(-1)?.headers.some(([name]) => name === 'x-late')).toBe(false);
    expect(rig().countersSince(start, gateway)).toMatchObject({
      override_message_timeout_ignored: 1,
      message_timeouts: 1,
      failure_mode_allowed: 1,
    });
  });

  it('a second override for the same message is ignored', async () => {
    lateAnswer([200, 900], 400);
    const start = { ...gateway.stats.counters };

    const response = await send(gateway.url);

    expect(response.status).toBe(200);
    expect(rig().origin.received.at(-1)?.headers.some(([name]) => name === 'x-late')).toBe(false);
    expect(rig().countersSince(start, gateway)).toMatchObject({
      override_message_timeout_received: 1,
      override_message_timeout_ignored: 1,
      message_timeouts: 1,
    });
  });

  it('makes Envoy ignore every other field of the message carrying it', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_headers'
          ? [
              { override_message_timeout: { nanos: 500_000_000 }, immediate_response: { status: { code: 418 } } },
              continueResponse(request),
            ]
          : continueResponse(request),
      ),
    );

    const response = await send(gateway.url);

    expect(response.status).toBe(200);
  });
});

describe('buffer limit (docs/ext-proc.md, Timeouts and failure modes)', () => {
  let small: Awaited<ReturnType<Rig['gatewayWith']>>;
  beforeAll(async () => {
    small = await rig().gatewayWith({ filter: { bufferLimitBytes: 1024 } });
  });

  // FilterManager's requestDataTooLarge sends the 413; Filter::onLocalReply keeps it from the server.
  it('a request body over the limit gets a 413 local reply that the processor never sees', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_headers'
          ? continueResponse(request, { header_mutation: { set_headers: [setHeader('svc-cache', 'PASS')] } })
          : continueResponse(request),
      ),
    );
    const originCount = rig().origin.received.length;

    const response = await send(small.url, { method: 'POST', body: Buffer.alloc(4096, 'a') });

    expect(response.status).toBe(413);
    expect(response.text).toBe('Payload Too Large');
    expect(header(response, 'content-type')).toBe('text/plain');
    expect(header(response, 'svc-cache')).toBeUndefined();
    expect(rig().origin.received.length).toBe(originCount);
    expect(small.stats.lastRequest()?.responseCodeDetails).toBe('request_payload_too_large');
    expect(small.stats.lastRequest()?.processorMessages).toEqual([{ direction: 'sent', type: 'request_headers' }]);
  });

  // ProcessorState applies a body mutation to the filter manager's watermark buffer, whose overflow is
  // requestDataTooLarge (413) on the request side and responseDataTooLarge (500) on the response side.
  it('a request body mutation over the limit is a 413 and the origin is not called', async () => {
    const big = Buffer.alloc(2048, 'r');
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_body'
          ? continueResponse(request, {
              header_mutation: { set_headers: [setHeader('content-length', String(big.length))] },
              body_mutation: { body: big },
            })
          : continueResponse(request),
      ),
    );
    const originCount = rig().origin.received.length;

    const response = await send(small.url, { method: 'POST', body: '{"query":"{a}"}' });

    expect(response.status).toBe(413);
    expect(response.text).toBe('Payload Too Large');
    expect(rig().origin.received.length).toBe(originCount);
    expect(small.stats.lastRequest()?.responseCodeDetails).toBe('request_payload_too_large');
  });

  it('a response body mutation over the limit is a 500', async () => {
    const big = Buffer.alloc(2048, 'r');
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_body'
          ? continueResponse(request, {
              header_mutation: { set_headers: [setHeader('content-length', String(big.length))] },
              body_mutation: { body: big },
            })
          : continueResponse(request),
      ),
    );

    const response = await send(small.url);

    expect(response.status).toBe(500);
    expect(response.text).toBe('Internal Server Error');
    expect(small.stats.lastRequest()?.responseCodeDetails).toBe('response_payload_too_large');
  });

  it('a body passed with request_body_mode NONE is not limited', async () => {
    rig().processor.use(
      answerEach((request) => ({
        ...continueResponse(request),
        ...(request.request === 'request_headers' ? { mode_override: { response_header_mode: HeaderSendMode.SKIP } } : {}),
      })),
    );

    const streamsBefore = rig().processor.streams.length;
    const body = await new Promise<string>((resolve, reject) => {
      const request = http.request(new URL('/graphql', small.url), {
        method: 'POST',
        agent: false,
        headers: { 'transfer-encoding': 'chunked' },
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve(Buffer.concat(chunks).toString()));
      });
      request.on('error', reject);
      request.flushHeaders();
      // The body only starts once the processor has let the headers through with body mode NONE.
      const waitForAnswer = setInterval(() => {
        if ((rig().processor.streams[streamsBefore]?.sent.length ?? 0) > 0) {
          clearInterval(waitForAnswer);
          request.end(Buffer.alloc(4096, 'b'));
        }
      }, 5);
    });

    expect(body).toBe('{"data":{}}');
    expect(rig().origin.received.at(-1)?.body.length).toBe(4096);
  });

  it('a response body over the limit while its headers are held is a direct 500', async () => {
    rig().origin.use(jsonOrigin(JSON.stringify({ data: 'x'.repeat(4096) })));

    const response = await send(small.url);

    expect(response.status).toBe(500);
    expect(response.text).toBe('Internal Server Error');
    expect(small.stats.lastRequest()?.responseCodeDetails).toBe('response_payload_too_large');
    await delay(30);
    // Sent straight to the client: the processor never sees the 500.
    expect(kinds(rig().lastStream().received)).toEqual(['request_headers', 'response_headers']);
  });
});
