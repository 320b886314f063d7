import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { echoAnswer, startEchoOrigin, type EchoOrigin, type EchoRequest } from '../support/echoOrigin.js';

/**
 * The echo origin is the property test's oracle (test/integration/echo.property.test.ts): what it
 * answers over HTTP must be what `echoAnswer` computes for the same request, and it must tell apart
 * the requests issue 12 says an origin may tell apart.
 */

const NUM = 'query Num($n: Float) { echo(n: $n) { id text } }';

describe('the echo origin', () => {
  let origin: EchoOrigin;
  let base: string;

  beforeAll(async () => {
    origin = await startEchoOrigin();
    base = new URL(origin.url).origin;
  });
  afterAll(async () => {
    await origin.close();
  });
  beforeEach(() => {
    origin.reset();
  });

  async function ask(request: EchoRequest): Promise<{ status: number; headers: Headers; text: string }> {
    const response = await fetch(`${base}${request.target}`, {
      method: request.method,
      headers: request.headers,
      ...(request.method === 'POST' ? { body: new Uint8Array(request.body) } : {}),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  const post = (body: string, headers: Record<string, string> = {}, target = '/graphql'): EchoRequest => ({
    method: 'POST',
    target,
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: Buffer.from(body),
  });

  it('answers over HTTP what echoAnswer computes, and tells number spellings apart', async () => {
    const answers: string[] = [];
    for (const n of ['1', '1.0', '9007199254740993', '9007199254740992']) {
      const request = post(`{"query":${JSON.stringify(NUM)},"variables":{"n":${n}}}`);
      // fetch sends the Host it derives from the URL.
      const expected = echoAnswer({ ...request, headers: { ...request.headers, host: new URL(base).host } }, origin.version, 0);
      const answer = await ask(request);
      expect({ status: answer.status, text: answer.text }).toEqual({ status: 200, text: expected.body });
      expect(expected.reusable).toBe(true);
      answers.push(answer.text);
    }
    expect(new Set(answers).size).toBe(4);
  });

  it('reads the last of a repeated GET parameter, and URL parameters before the body of a POST', async () => {
    const get = await ask({
      method: 'GET',
      target: `/graphql?query=${encodeURIComponent('{ echo { id } }')}&query=${encodeURIComponent('{ viewer { id } }')}`,
      headers: { accept: 'application/json' },
      body: Buffer.alloc(0),
    });
    expect(get.text).toBe('{"data":{"viewer":{"id":"echo"}}}');
    const urlFirst = await ask(post('{"query":"{ echo { id } }"}', {}, `/graphql?query=${encodeURIComponent('{ session { id } }')}`));
    expect(urlFirst.text).toBe('{"data":{"session":{"id":"echo"}}}');
  });

  it('gives an answer a shared cache must not reuse a number new on every call', async () => {
    const request = post(`{"query":${JSON.stringify(NUM)},"variables":{"n":1,"echoResponse":"cc=no-store"}}`);
    const [first, second] = [await ask(request), await ask(request)];
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.text).not.toBe(second.text);
    expect(echoAnswer(request, origin.version, 0).reusable).toBe(false);
  });

  it('names the headers it was told to read in Vary, and streams to a client that accepts only event streams', async () => {
    const reads = await ask(post('{"query":"{ echo { id } }","variables":{"echoResponse":"reads=cookie|x-user"}}', { cookie: 'sid=1' }));
    expect(reads.headers.get('vary')).toBe('cookie, x-user');
    const stream = await ask(post('{"query":"{ echo { id } }"}', { accept: 'text/event-stream' }));
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.text).toBe('event: next\ndata: {"data":{"echo":{"id":"echo"}}}\n\nevent: complete\ndata:\n\n');
  });

  it('bumps its version with each executed bump, batched or not', async () => {
    await ask(post('{"query":"mutation { bump { text } }"}'));
    const batch = await ask(post('[{"query":"mutation { bump { text } }"},{"query":"mutation { bump { text } }"}]'));
    expect(batch.text).toBe('[{"data":{"bump":{"text":"version 2"}}},{"data":{"bump":{"text":"version 3"}}}]');
    expect(origin.version).toBe(3);
  });
});
