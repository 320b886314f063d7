import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerEach, continueResponse, type ScriptedStream } from '../support/fakeProcessor.js';
import { graphQLGetUrl } from '../support/origin.js';
import { useStack } from '../support/stack.js';
import { header, kinds, send, startRig, type Rig } from './harness.js';

interface Http2Response {
  status: number;
  headers: http2.IncomingHttpHeaders;
  text: string;
}

/** How an HTTP/2 client ends a request whose HEADERS frame did not (docs/ext-proc.md, HTTP/2 requests). */
type Ending = 'headers' | 'empty-data' | 'trailers';

/** One request over cleartext HTTP/2 with prior knowledge (h2c), ending as `ending` says. */
async function sendHttp2(baseUrl: string, path: string, ending: Ending): Promise<Http2Response> {
  const session = http2.connect(baseUrl);
  try {
    return await new Promise<Http2Response>((resolve, reject) => {
      session.on('error', reject);
      const stream = session.request(
        { ':method': 'GET', ':path': path, accept: 'application/json' },
        { endStream: ending === 'headers', waitForTrailers: ending === 'trailers' },
      );
      if (ending === 'trailers') stream.on('wantTrailers', () => stream.sendTrailers({ 'x-trailer': 'yes' }));
      if (ending !== 'headers') stream.end();
      let headers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on('response', (received) => (headers = received));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve({ status: Number(headers[':status']), headers, text: Buffer.concat(chunks).toString() }));
      stream.on('error', reject);
    });
  } finally {
    session.close();
  }
}

describe('the gateway over h2c', () => {
  let rig: Rig;
  let streams: ScriptedStream[];

  beforeAll(async () => {
    rig = await startRig();
    streams = [];
    rig.processor.use((stream) => {
      streams.push(stream);
      return answerEach((request) => continueResponse(request))(stream);
    });
  });

  afterAll(async () => {
    await rig.close();
  });

  it('a GET whose HEADERS carry END_STREAM: request_headers with end_of_stream', async () => {
    const response = await sendHttp2(rig.gateway.url, '/graphql?query=%7Ba%7D', 'headers');

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":{}}');
    expect(response.headers.server).toBe('envoy');
    await streams.at(-1)?.cancelled;
    const stream = rig.lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'response_headers', 'response_body']);
    expect(stream.received[0]?.request_headers?.end_of_stream).toBe(true);
  });

  // ActiveStream::decodeHeaders(end_stream=false) then decodeData("", end_stream=true): ext_proc sends the
  // headers without end_of_stream and the (empty) buffered body after them.
  it('a GET ended by an empty DATA frame: request_headers without end_of_stream, then an empty request_body', async () => {
    const response = await sendHttp2(rig.gateway.url, '/graphql?query=%7Ba%7D', 'empty-data');

    expect(response.status).toBe(200);
    await streams.at(-1)?.cancelled;
    const stream = rig.lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'request_body', 'response_headers', 'response_body']);
    expect(stream.received[0]?.request_headers?.end_of_stream).toBe(false);
    expect(stream.received[1]?.request_body).toEqual({ body: Buffer.alloc(0), end_of_stream: true });
    expect(rig.origin.received.at(-1)?.method).toBe('GET');
  });

  // Filter::onTrailers: the buffered body goes out when the trailers arrive, so without end_of_stream.
  it('a GET ended by trailers: an empty request_body without end_of_stream (trailers themselves are skipped)', async () => {
    const response = await sendHttp2(rig.gateway.url, '/graphql?query=%7Ba%7D', 'trailers');

    expect(response.status).toBe(200);
    await streams.at(-1)?.cancelled;
    const stream = rig.lastStream();
    expect(kinds(stream.received)).toEqual(['request_headers', 'request_body', 'response_headers', 'response_body']);
    expect(stream.received[0]?.request_headers?.end_of_stream).toBe(false);
    expect(stream.received[1]?.request_body).toEqual({ body: Buffer.alloc(0), end_of_stream: false });
  });

  it('HTTP/1.1 still works on the same port', async () => {
    expect((await send(rig.gateway.url)).status).toBe(200);
  });
});

describe('the sidecar behind an h2c client', () => {
  const stack = useStack({}, { freshEachTest: false });

  it.each<Ending>(['headers', 'empty-data', 'trailers'])('a GET ended by %s is a bodiless GET: MISS, then HIT', async (ending) => {
    const url = new URL(graphQLGetUrl(stack().url, { query: `query H2${ending.replace('-', '')} { todos { id } }` }));
    const path = url.pathname + url.search;

    const first = await sendHttp2(stack().gateway.url, path, ending);
    const second = await sendHttp2(stack().gateway.url, path, ending);

    expect([first.status, second.status]).toEqual([200, 200]);
    expect([first.headers['svc-cache'], second.headers['svc-cache']]).toEqual(['MISS', 'HIT']);
    expect(second.text).toBe(first.text);
  });

  it('a GET that does carry a body still passes, uncached', async () => {
    const url = new URL(graphQLGetUrl(stack().url, { query: 'query GetWithBody { todos { id } }' }));

    const response = await send(stack().gateway.url, { method: 'GET', path: url.pathname + url.search, body: 'x' });

    expect(response.status).toBe(200);
    expect(header(response, 'svc-cache')).toBe('PASS');
  });
});
