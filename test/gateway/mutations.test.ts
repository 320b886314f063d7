import { describe, expect, it } from 'vitest';
import type { HeaderMutation, HeaderValueOption } from '../../src/extproc/messages.js';
import { answerEach, continueResponse, setHeader } from '../support/fakeProcessor.js';
import { header, headerNames, send, type OriginRequest, useRig } from './harness.js';

const rig = useRig();

/** Answers request_headers with `mutation`, everything else with CONTINUE. */
function mutateRequestHeaders(mutation: HeaderMutation): void {
  rig().processor.use(
    answerEach((request) =>
      request.request === 'request_headers'
        ? continueResponse(request, { header_mutation: mutation })
        : continueResponse(request),
    ),
  );
}

function originHeaders(request: OriginRequest | undefined, name: string): string[] {
  return (request?.headers ?? []).filter(([key]) => key === name).map(([, value]) => value);
}

function immediate(headers: HeaderValueOption[], body: string, code?: number, details?: string): void {
  rig().processor.use(
    answerEach(() => ({
      immediate_response: {
        ...(code === undefined ? {} : { status: { code } }),
        headers: { set_headers: headers },
        body: Buffer.from(body),
        ...(details === undefined ? {} : { details }),
      },
    })),
  );
}

describe('header values (docs/ext-proc.md, Header values)', () => {
  it('raw_value is what Envoy reads', async () => {
    mutateRequestHeaders({ set_headers: [setHeader('x-added', 'raw')] });

    await send(rig().gateway.url);

    expect(originHeaders(rig().origin.received.at(-1), 'x-added')).toEqual(['raw']);
  });

  it('value alone sets the header to the empty string', async () => {
    mutateRequestHeaders({ set_headers: [{ header: { key: 'x-value-only', value: 'ignored' } }] });

    await send(rig().gateway.url);

    expect(originHeaders(rig().origin.received.at(-1), 'x-value-only')).toEqual(['']);
  });

  // MutationUtils::applyHeaderMutations (1.36) reads raw_value only: value beside it is ignored, not an error.
  it('value and raw_value together: raw_value is used and value ignored', async () => {
    const start = { ...rig().gateway.stats.counters };
    mutateRequestHeaders({ set_headers: [{ header: { key: 'x-both', value: 'a', raw_value: Buffer.from('b') } }] });

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(originHeaders(rig().origin.received.at(-1), 'x-both')).toEqual(['b']);
    expect(rig().countersSince(start).rejected_header_mutations).toBeUndefined();
  });

  it('a value with a line break rejects the mutation', async () => {
    mutateRequestHeaders({ set_headers: [setHeader('x-bad', 'a\r\nx-injected: 1')] });

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(500);
    expect(rig().gateway.stats.lastRequest()?.responseCodeDetails).toBe('Invalid_character_in_set_headers_mutation.');
  });
});

describe('append (docs/ext-proc.md, Header values)', () => {
  it('append true adds a value next to the client one', async () => {
    mutateRequestHeaders({ set_headers: [setHeader('x-tag', 'added', true)] });

    await send(rig().gateway.url, { headers: { 'x-tag': 'client' } });

    expect(originHeaders(rig().origin.received.at(-1), 'x-tag')).toEqual(['client', 'added']);
  });

  it.each([
    ['append false', setHeader('x-tag', 'replaced', false)],
    ['append absent', setHeader('x-tag', 'replaced')],
    ['append_action ADD_IF_ABSENT, which Envoy ignores', { ...setHeader('x-tag', 'replaced'), append_action: 1 }],
    ['append_action APPEND_IF_EXISTS_OR_ADD with append false', { ...setHeader('x-tag', 'replaced', false), append_action: 0 }],
  ])('%s overwrites', async (_label, option) => {
    mutateRequestHeaders({ set_headers: [option] });

    await send(rig().gateway.url, { headers: { 'x-tag': 'client' } });

    expect(originHeaders(rig().origin.received.at(-1), 'x-tag')).toEqual(['replaced']);
  });
});

describe('mutation rules (docs/ext-proc.md, Header mutations)', () => {
  it('routing and x-envoy headers are ignored and counted; :path and ordinary headers change', async () => {
    const start = { ...rig().gateway.stats.counters };
    mutateRequestHeaders({
      set_headers: [
        setHeader(':authority', 'evil.example'),
        setHeader('host', 'evil.example'),
        setHeader(':method', 'DELETE'),
        setHeader(':scheme', 'https'),
        setHeader('x-envoy-original-path', '/x'),
        setHeader(':path', '/rewritten?x=1'),
        setHeader('x-allowed', 'yes'),
      ],
      remove_headers: ['accept'],
    });

    const response = await send(rig().gateway.url, { path: '/graphql', headers: { accept: 'application/json' } });

    expect(response.status).toBe(200);
    const origin = rig().origin.received.at(-1);
    expect(origin?.method).toBe('GET');
    expect(origin?.path).toBe('/rewritten?x=1');
    expect(originHeaders(origin, 'host')).toEqual([new URL(rig().gateway.url).host]);
    expect(originHeaders(origin, 'x-envoy-original-path')).toEqual([]);
    expect(originHeaders(origin, 'x-allowed')).toEqual(['yes']);
    expect(originHeaders(origin, 'accept')).toEqual([]);
    expect(rig().countersSince(start)).toMatchObject({ rejected_header_mutations: 5 });
  });

  it('pseudo-headers and host cannot be removed', async () => {
    const start = { ...rig().gateway.stats.counters };
    mutateRequestHeaders({ remove_headers: [':path', 'host', ':authority'] });

    const response = await send(rig().gateway.url, { path: '/kept' });

    expect(response.status).toBe(200);
    expect(rig().origin.received.at(-1)?.path).toBe('/kept');
    expect(rig().countersSince(start)).toMatchObject({ rejected_header_mutations: 3 });
  });

  it('with disallow_is_error a refused header fails the request with 500', async () => {
    const strict = await rig().gatewayWith({ filter: { mutationRules: { disallowIsError: true } } });
    mutateRequestHeaders({ set_headers: [setHeader(':authority', 'evil.example')] });

    const response = await send(strict.url);

    expect(response.status).toBe(500);
    expect(response.text).toBe('');
    expect(strict.stats.lastRequest()?.responseCodeDetails).toBe('Invalid_attempt_to_modify_:authority');
  });

  it('CONTINUE_AND_REPLACE may change :method', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'request_headers'
          ? continueResponse(request, { status: 1, header_mutation: { set_headers: [setHeader(':method', 'POST')] } })
          : continueResponse(request),
      ),
    );

    await send(rig().gateway.url);

    expect(rig().origin.received.at(-1)?.method).toBe('POST');
  });

  it(':status may be set on a response', async () => {
    rig().processor.use(
      answerEach((request) =>
        request.request === 'response_headers'
          ? continueResponse(request, { header_mutation: { set_headers: [setHeader(':status', '203')] } })
          : continueResponse(request),
      ),
    );

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(203);
    expect(response.text).toBe('{"data":{}}');
  });
});

describe('immediate_response (docs/ext-proc.md, Immediate responses)', () => {
  it('drops x-envoy and routing headers, keeps the content-type it sets, forces content-length', async () => {
    const start = { ...rig().gateway.stats.counters };
    immediate(
      [
        setHeader('content-type', 'application/json'),
        setHeader('x-envoy-foo', 'bar'),
        setHeader('host', 'evil.example'),
        setHeader('content-length', '999'),
        setHeader('svc-cache', 'HIT'),
      ],
      '{"data":1}',
      200,
      'served from cache',
    );

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
    expect(response.text).toBe('{"data":1}');
    expect(header(response, 'content-type')).toBe('application/json');
    expect(header(response, 'content-length')).toBe('10');
    expect(header(response, 'svc-cache')).toBe('HIT');
    expect(headerNames(response)).not.toContain('x-envoy-foo');
    expect(headerNames(response)).not.toContain('host');
    expect(rig().countersSince(start)).toMatchObject({ rejected_header_mutations: 2, stream_msgs_received: 1 });
    expect(rig().gateway.stats.lastRequest()?.responseCodeDetails).toBe('served_from_cache');
  });

  it('a body without content-type gets text/plain', async () => {
    immediate([], 'plain', 403);

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(403);
    expect(header(response, 'content-type')).toBe('text/plain');
    expect(header(response, 'content-length')).toBe('5');
  });

  it('an empty body removes content-type and content-length set by the server', async () => {
    immediate([setHeader('content-type', 'application/json'), setHeader('content-length', '7')], '', 401);

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(401);
    expect(response.text).toBe('');
    expect(header(response, 'content-type')).toBeUndefined();
    // The HTTP/1 codec frames the headers-only reply itself.
    expect(header(response, 'content-length')).toBe('0');
  });

  it.each([
    ['below 200', 100],
    ['absent', undefined],
  ])('a status %s becomes 200', async (_label, code) => {
    immediate([], 'x', code);

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(200);
  });

  it('a failing header mutation only loses the rest of the changes; the reply is still sent', async () => {
    immediate([setHeader('x-first', '1'), setHeader('x-bad', 'a\r\nb'), setHeader('x-last', '1')], 'body', 429);

    const response = await send(rig().gateway.url);

    expect(response.status).toBe(429);
    expect(header(response, 'x-first')).toBe('1');
    expect(header(response, 'x-last')).toBeUndefined();
  });
});
