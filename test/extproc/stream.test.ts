import { describe, expect, it } from 'vitest';
import {
  Exchange,
  type RequestDecision,
  type RequestHead,
  type RequestHeadDecision,
  type ResponseBodyDecision,
  type ResponseHeadDecision,
} from '../../src/engine/engine.js';
import type { HeaderList } from '../../src/http/headers.js';
import type { ProcessingRequest } from '../../src/extproc/messages.js';
import { ProcessingStream, ProtocolViolation, type PhaseEngine } from '../../src/extproc/stream.js';

/**
 * ProcessingStream alone, over a scripted engine: which phase call each Envoy message becomes, the
 * ProcessingResponse each answer becomes, and that the exchange is disposed exactly once.
 */

class ScriptedEngine implements PhaseEngine {
  readonly calls: string[] = [];
  exchanges: Exchange[] = [];
  disposals = 0;

  constructor(
    private readonly script: {
      requestHead?: (exchange: Exchange) => RequestHeadDecision;
      requestBody?: (exchange: Exchange, body: Buffer) => RequestDecision;
      responseHead?: (exchange: Exchange) => ResponseHeadDecision;
      responseBody?: (exchange: Exchange, body: Buffer) => ResponseBodyDecision;
    },
  ) {}

  begin(head?: RequestHead): Exchange {
    this.calls.push(head ? `begin ${head.method} ${head.path} hasBody=${head.hasBody}` : 'begin without a request');
    const exchange = new Exchange(head);
    const dispose = exchange.dispose.bind(exchange);
    exchange.dispose = () => {
      this.disposals += 1;
      dispose();
    };
    this.exchanges.push(exchange);
    return exchange;
  }

  async requestHead(exchange: Exchange): Promise<RequestHeadDecision> {
    this.calls.push('requestHead');
    return this.script.requestHead?.(exchange) ?? { kind: 'need-body' };
  }

  async requestBody(exchange: Exchange, body: Buffer): Promise<RequestDecision> {
    this.calls.push(`requestBody ${body.toString()}`);
    return this.script.requestBody?.(exchange, body) ?? { kind: 'forward', requestHeaders: { set: [], remove: [] } };
  }

  async responseHead(exchange: Exchange, status: number, headers: HeaderList, endOfStream: boolean): Promise<ResponseHeadDecision> {
    this.calls.push(`responseHead ${status} endOfStream=${endOfStream} headers=${headers.length}`);
    return this.script.responseHead?.(exchange) ?? { headers: { set: [], remove: [] }, wantsBody: true };
  }

  async responseBody(exchange: Exchange, body: Buffer): Promise<ResponseBodyDecision> {
    this.calls.push(`responseBody ${body.toString()}`);
    return this.script.responseBody?.(exchange, body) ?? { headers: { set: [], remove: [] } };
  }
}

const header = (key: string, value: string) => ({ key, raw_value: Buffer.from(value, 'latin1') });

function requestHeaders(method: string, endOfStream = false): ProcessingRequest {
  return {
    request: 'request_headers',
    request_headers: { headers: { headers: [header(':method', method), header(':path', '/graphql')] }, end_of_stream: endOfStream },
  };
}

const requestBody = (body: string): ProcessingRequest => ({ request: 'request_body', request_body: { body: Buffer.from(body), end_of_stream: true } });
const responseHeaders = (endOfStream = false): ProcessingRequest => ({
  request: 'response_headers',
  response_headers: { headers: { headers: [header(':status', '200'), header('content-type', 'application/json')] }, end_of_stream: endOfStream },
});
const responseBody = (body: string): ProcessingRequest => ({ request: 'response_body', response_body: { body: Buffer.from(body), end_of_stream: true } });

describe('ProcessingStream', () => {
  it('asks for the body, forwards with the engine\'s header changes and body, then rewrites the response body', async () => {
    const engine = new ScriptedEngine({
      requestBody: () => ({ kind: 'forward', requestHeaders: { set: [['x-a', '1']], remove: ['accept-encoding'] }, requestBody: Buffer.from('{"q":2}') }),
      responseBody: () => ({ headers: { set: [['svc-cache', 'MISS']], remove: [] }, body: Buffer.from('ok') }),
    });
    const stream = new ProcessingStream(engine);
    expect(await stream.handle(requestHeaders('POST'))).toEqual({ request_headers: { response: {} } });
    expect(await stream.handle(requestBody('{"q":1}'))).toEqual({
      request_body: {
        response: {
          header_mutation: {
            set_headers: [
              { header: { key: 'x-a', raw_value: Buffer.from('1') } },
              { header: { key: 'content-length', raw_value: Buffer.from('7') } },
            ],
            remove_headers: ['accept-encoding'],
          },
          body_mutation: { body: Buffer.from('{"q":2}') },
        },
      },
    });
    expect(await stream.handle(responseHeaders())).toEqual({ response_headers: { response: {} } });
    expect(stream.complete).toBe(false);
    expect(await stream.handle(responseBody('origin'))).toEqual({
      response_body: {
        response: {
          header_mutation: {
            set_headers: [
              { header: { key: 'svc-cache', raw_value: Buffer.from('MISS') } },
              { header: { key: 'content-length', raw_value: Buffer.from('2') } },
            ],
            remove_headers: [],
          },
          body_mutation: { body: Buffer.from('ok') },
        },
      },
    });
    expect(stream.complete).toBe(true);
    expect(engine.calls).toEqual([
      'begin POST /graphql hasBody=true',
      'requestHead',
      'requestBody {"q":1}',
      'responseHead 200 endOfStream=false headers=2',
      'responseBody origin',
    ]);
  });

  it('answers an immediate response and is complete', async () => {
    const engine = new ScriptedEngine({
      requestHead: () => ({ kind: 'respond', response: { status: 405, headers: [['allow', 'POST']], body: Buffer.from('no') } }),
    });
    const stream = new ProcessingStream(engine);
    expect(await stream.handle(requestHeaders('GET', true))).toEqual({
      immediate_response: {
        status: { code: 405 },
        headers: { set_headers: [{ header: { key: 'allow', raw_value: Buffer.from('POST') } }] },
        body: Buffer.from('no'),
      },
    });
    expect(stream.complete).toBe(true);
  });

  it.each(['response headers', 'response body'])('answers the %s with an immediate response when the engine replaces the origin response', async (phase) => {
    const replacement = { status: 200, headers: [['svc-cache-stale', 'error']] as Array<[string, string]>, body: Buffer.from('stored') };
    const engine = new ScriptedEngine({
      responseHead: () => ({ headers: { set: [], remove: [] }, wantsBody: true, ...(phase === 'response headers' ? { replacement } : {}) }),
      responseBody: () => ({ headers: { set: [], remove: [] }, replacement }),
    });
    const stream = new ProcessingStream(engine);
    await stream.handle(requestHeaders('POST'));
    await stream.handle(requestBody('{}'));
    const head = await stream.handle(responseHeaders());
    const answer = phase === 'response headers' ? head : await stream.handle(responseBody('<html>'));
    expect(answer).toEqual({
      immediate_response: {
        status: { code: 200 },
        headers: { set_headers: [{ header: { key: 'svc-cache-stale', raw_value: Buffer.from('error') } }] },
        body: Buffer.from('stored'),
      },
    });
    expect(stream.complete).toBe(true);
  });

  it('turns both bodies off for a pass, and answers a body Envoy still sends without asking the engine', async () => {
    const engine = new ScriptedEngine({
      requestHead: (exchange) => {
        exchange.forward({ kind: 'pass', reason: 'method-not-graphql' });
        return { kind: 'forward', requestHeaders: { set: [], remove: [] } };
      },
      responseHead: () => ({ headers: { set: [['svc-cache', 'PASS']], remove: [] }, wantsBody: false }),
    });
    const stream = new ProcessingStream(engine);
    expect(await stream.handle(requestHeaders('PUT'))).toEqual({
      request_headers: { response: {} },
      mode_override: { request_body_mode: 0, response_body_mode: 0 },
    });
    expect(await stream.handle(requestBody('ignored'))).toEqual({ request_body: { response: {} } });
    const answer = await stream.handle(responseHeaders());
    expect(answer.mode_override).toEqual({ response_body_mode: 0 });
    expect(stream.complete).toBe(true);
    expect(engine.calls).not.toContain('requestBody ignored');
  });

  it('begins an exchange without a request for a response Envoy made itself (a local reply)', async () => {
    const engine = new ScriptedEngine({ responseHead: () => ({ headers: { set: [], remove: [] }, wantsBody: false }) });
    const stream = new ProcessingStream(engine);
    await stream.handle(responseHeaders(true));
    expect(engine.calls).toEqual(['begin without a request', 'responseHead 200 endOfStream=true headers=2']);
    expect(stream.complete).toBe(true);
  });

  it('disposes the exchange once however often it is closed, and reports an undecided summary before any request', () => {
    const engine = new ScriptedEngine({});
    const stream = new ProcessingStream(engine);
    expect(stream.summary).toEqual({
      outcome: undefined,
      passReason: undefined,
      errorCode: undefined,
      operationName: undefined,
      documentHash: undefined,
      originLatencyMs: undefined,
      bytesServedFromCache: 0,
    });
    stream.close();
    expect(engine.disposals).toBe(0);
  });

  it.each([
    ['forwarded', [requestHeaders('POST'), requestBody('{}')]],
    ['its body awaited (Envoy answered 413 over the buffer)', [requestHeaders('POST')]],
  ] as Array<[string, ProcessingRequest[]]>)('settles a stream that ends with its request %s and no response phase as a PASS for no-response-phase', async (_name, messages) => {
    const stream = new ProcessingStream(new ScriptedEngine({}));
    for (const message of messages) await stream.handle(message);
    expect(stream.summary.outcome).toBeUndefined();
    stream.close();
    expect(stream.summary).toMatchObject({ outcome: 'PASS', passReason: 'no-response-phase' });
  });

  it('tells the exchange when a stream ends with the response body awaited, once', async () => {
    let lost = 0;
    const engine = new ScriptedEngine({
      responseHead: (exchange) => {
        exchange.whenBodyLost = () => (lost += 1);
        return { headers: { set: [], remove: [] }, wantsBody: true };
      },
    });
    const stream = new ProcessingStream(engine);
    await stream.handle(requestHeaders('POST'));
    await stream.handle(requestBody('{}'));
    await stream.handle(responseHeaders());
    stream.close();
    stream.close();
    expect(lost).toBe(1);
  });

  it('tells the exchange when a stream ends while the response head is still being decided', async () => {
    let lost = 0;
    let decided: () => void = () => {};
    const engine = new ScriptedEngine({});
    engine.responseHead = async (exchange) => {
      exchange.whenBodyLost = () => (lost += 1);
      await new Promise<void>((resolve) => (decided = resolve));
      return { headers: { set: [], remove: [] }, wantsBody: true };
    };
    const stream = new ProcessingStream(engine);
    await stream.handle(requestHeaders('POST'));
    await stream.handle(requestBody('{}'));
    const head = stream.handle(responseHeaders());
    await new Promise((resolve) => setImmediate(resolve));
    stream.close();
    decided();
    await head;
    expect(lost).toBe(1);
  });

  it('settles nothing for a request answered at once or a stream ended before any answer', async () => {
    const hit = new ProcessingStream(new ScriptedEngine({ requestBody: () => ({ kind: 'respond', response: { status: 200, headers: [], body: Buffer.from('{}') } }) }));
    await hit.handle(requestHeaders('POST'));
    await hit.handle(requestBody('{}'));
    hit.close();
    expect(hit.summary.outcome).toBeUndefined();
    const cut = new ProcessingStream(new ScriptedEngine({}));
    cut.close();
    expect(cut.summary.outcome).toBeUndefined();
  });

  it('releases the exchange on close after a request began', async () => {
    const engine = new ScriptedEngine({});
    const stream = new ProcessingStream(engine);
    await stream.handle(requestHeaders('POST'));
    let released = 0;
    engine.exchanges[0]!.lead({ release: () => (released += 1) });
    stream.close();
    stream.close();
    expect([engine.disposals, released]).toEqual([2, 1]);
  });

  it.each([
    ['a response body before response headers', [requestHeaders('POST'), responseBody('x')], 'unexpected response_body while awaiting-request-body'],
    ['request headers twice', [requestHeaders('POST'), requestHeaders('POST')], 'unexpected request_headers while awaiting-request-body'],
    ['no request case', [{}], 'ProcessingRequest carries none of the request cases'],
  ] as Array<[string, ProcessingRequest[], string]>)('refuses %s as a protocol violation', async (_name, messages, message) => {
    const stream = new ProcessingStream(new ScriptedEngine({}));
    const last = messages.pop()!;
    for (const earlier of messages) await stream.handle(earlier);
    await expect(stream.handle(last)).rejects.toThrow(new ProtocolViolation(message));
  });

  it('refuses request headers without :method or :path', async () => {
    const stream = new ProcessingStream(new ScriptedEngine({}));
    await expect(stream.handle({ request: 'request_headers', request_headers: { headers: { headers: [header(':method', 'GET')] } } })).rejects.toThrow(
      'request_headers without :method or :path',
    );
  });
});
