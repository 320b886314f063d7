import { EventEmitter } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Exchange, type DecisionEngine } from '../../src/engine/engine.js';
import type { ProcessingRequest, ProcessingResponse } from '../../src/extproc/messages.js';
import { serveStream } from '../../src/extproc/server.js';
import { Metrics, silentLogger } from '../../src/observability/index.js';

/**
 * serveStream over a stand-in for grpc-js's call: once the stream ends, the call holds none of its
 * listeners (why: src/extproc/server.ts, serveStream).
 */

const EVENTS = ['data', 'end', 'cancelled', 'error'] as const;
type CallEvent = (typeof EVENTS)[number];

class StandInCall extends EventEmitter {
  readonly written: ProcessingResponse[] = [];
  ended = false;

  constructor() {
    super();
    // As grpc-js's ServerDuplexStreamImpl does: its own listener ends the call on an error.
    this.on('error', () => this.end());
  }

  write(answer: ProcessingResponse): boolean {
    this.written.push(answer);
    return true;
  }

  end(): this {
    this.ended = true;
    return this;
  }

  /** Listeners other than the stand-in's own. */
  listenersLeft(): Record<CallEvent, number> {
    const own = (event: CallEvent): number => (event === 'error' ? 1 : 0);
    return Object.fromEntries(EVENTS.map((event) => [event, this.listenerCount(event) - own(event)])) as Record<CallEvent, number>;
  }
}

/** Answers every request on its headers with an immediate 200, as a HIT is answered. */
const hittingEngine = {
  begin: () => new Exchange({ method: 'GET', path: '/graphql?query=%7Bx%7D', headers: [], hasBody: false }),
  requestHead: async (exchange: Exchange) => {
    exchange.settle('HIT', { servedBytes: 2 });
    return { kind: 'respond' as const, response: { status: 200, headers: [], body: Buffer.from('{}') } };
  },
} as unknown as DecisionEngine;

/** The request_headers message of a request by `method` for `path`. */
function requestHeaders(method: string, path: string, endOfStream: boolean): ProcessingRequest {
  return {
    request: 'request_headers',
    request_headers: {
      headers: { headers: [{ key: ':method', raw_value: Buffer.from(method) }, { key: ':path', raw_value: Buffer.from(path) }] },
      end_of_stream: endOfStream,
    },
  };
}

const GET_HEADERS = requestHeaders('GET', '/graphql?query=%7Bx%7D', true);

function serve(): { call: StandInCall; closed: () => number } {
  const call = new StandInCall();
  let closed = 0;
  const options = { engine: hittingEngine, logger: silentLogger(), metrics: new Metrics({ processMetrics: false }), port: 0 };
  const asGrpcCall = call as unknown as grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>;
  serveStream(asGrpcCall, options, () => (closed += 1));
  return { call, closed: () => closed };
}

const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('serveStream', () => {
  it('takes its listeners off the call once the stream ends with a half-close', async () => {
    const { call, closed } = serve();
    call.emit('data', GET_HEADERS);
    await settled();
    expect(call.written.map((answer) => Object.keys(answer))).toEqual([['immediate_response']]);
    expect(call.ended).toBe(true);
    expect(call.listenersLeft()).toEqual({ data: 1, end: 1, cancelled: 1, error: 1 });
    call.emit('end');
    await settled();
    expect(closed()).toBe(1);
    expect(call.listenersLeft()).toEqual({ data: 0, end: 0, cancelled: 0, error: 0 });
  });

  it("takes them off when Envoy's cancel follows its half-close at once, and counts the request once", async () => {
    const { call, closed } = serve();
    call.emit('data', GET_HEADERS);
    await settled();
    call.emit('end');
    call.emit('cancelled');
    await settled();
    expect(closed()).toBe(1);
    expect(call.listenersLeft()).toEqual({ data: 0, end: 0, cancelled: 0, error: 0 });
  });

  it('takes them off when a message breaks the protocol and the call fails', async () => {
    const { call, closed } = serve();
    call.emit('data', { request: 'request_headers', request_headers: { headers: { headers: [] }, end_of_stream: true } });
    await settled();
    expect(call.ended).toBe(true);
    expect(closed()).toBe(1);
    expect(call.listenersLeft()).toEqual({ data: 0, end: 0, cancelled: 0, error: 0 });
  });

  describe('an answer that takes long', () => {
    /** Asks for the POST body, then answers it after `bodyMs` (a purge of many entries, Redis slow to reply). */
    function slowBodyEngine(bodyMs: number): DecisionEngine {
      return {
        begin: () => new Exchange({ method: 'POST', path: '/graphql', headers: [], hasBody: true }),
        requestHead: async () => ({ kind: 'need-body' as const }),
        requestBody: async (exchange: Exchange) => {
          await new Promise((resolve) => setTimeout(resolve, bodyMs));
          exchange.settle('HIT', { servedBytes: 2 });
          return { kind: 'respond' as const, response: { status: 200, headers: [], body: Buffer.from('{}') } };
        },
      } as unknown as DecisionEngine;
    }

    const POST_HEADERS = requestHeaders('POST', '/graphql', false);
    const POST_BODY: ProcessingRequest = { request: 'request_body', request_body: { body: Buffer.from('{}'), end_of_stream: true } };

    const metrics = new Metrics({ processMetrics: false });

    function serveWith(engine: DecisionEngine): StandInCall {
      const call = new StandInCall();
      const options = { engine, logger: silentLogger(), metrics, port: 0 };
      serveStream(call as unknown as grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>, options, () => undefined);
      return call;
    }

    /** A POST's headers and body sent to a stream whose engine answers the body after `bodyMs`. */
    function postTo(bodyMs: number): StandInCall {
      const call = serveWith(slowBodyEngine(bodyMs));
      call.emit('data', POST_HEADERS);
      call.emit('data', POST_BODY);
      return call;
    }

    async function abandoned(): Promise<number> {
      const text = await metrics.registry.getSingleMetricAsString('svc_cache_streams_abandoned_total');
      return Number(/^svc_cache_streams_abandoned_total (\d+)$/m.exec(text)?.[1]);
    }

    afterEach(() => {
      vi.useRealTimers();
    });

    it("asks Envoy for 5 s more once it has worked 500 ms on an answer, within max_message_timeout", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const call = postTo(1_200);
      await vi.advanceTimersByTimeAsync(499);
      expect(call.written.map((answer) => Object.keys(answer))).toEqual([['request_headers']]);
      await vi.advanceTimersByTimeAsync(1);
      expect(call.written.at(-1)).toEqual({ override_message_timeout: { seconds: 5 } });
      await vi.advanceTimersByTimeAsync(700);
      expect(call.written.map((answer) => Object.keys(answer))).toEqual([['request_headers'], ['override_message_timeout'], ['immediate_response']]);
    });

    // The admin-surface audit: a purge of 100,000 ids held the event loop past Envoy's 1 s in one
    // synchronous piece, so the 500 ms timer never fired and Envoy forwarded the purge to the origin.
    it('asks for more time before handling a body of 128 KiB or more, whose work no timer could interrupt', async () => {
      const call = serveWith({
        begin: () => new Exchange({ method: 'POST', path: '/graphql', headers: [], hasBody: true }),
        requestHead: async () => ({ kind: 'need-body' as const }),
        requestBody: async (exchange: Exchange) => {
          expect(call.written.map((answer) => Object.keys(answer))).toEqual([['request_headers'], ['override_message_timeout']]);
          exchange.settle('HIT', { servedBytes: 2 });
          return { kind: 'respond' as const, response: { status: 200, headers: [], body: Buffer.from('{}') } };
        },
      } as unknown as DecisionEngine);
      call.emit('data', POST_HEADERS);
      call.emit('data', { request: 'request_body', request_body: { body: Buffer.alloc(128 * 1024, 32), end_of_stream: true } });
      await settled();
      expect(call.written.map((answer) => Object.keys(answer))).toEqual([['request_headers'], ['override_message_timeout'], ['immediate_response']]);
      const small = postTo(0);
      await vi.waitFor(() => expect(small.written).toHaveLength(2));
      expect(small.written.map((answer) => Object.keys(answer))).toEqual([['request_headers'], ['immediate_response']]);
    });

    // The ext_proc audit: a GET coalesced behind another waited 800 ms besides two slow lookups, and
    // its headers' answer came after Envoy's 1 s, which then went on without svc-cache.
    it("asks for more time for a request's headers too once it has worked 500 ms on them", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const call = serveWith({
        begin: () => new Exchange({ method: 'GET', path: '/graphql?query=%7Bx%7D', headers: [], hasBody: false }),
        requestHead: async (exchange: Exchange) => {
          await new Promise((resolve) => setTimeout(resolve, 900));
          exchange.settle('HIT', { servedBytes: 2 });
          return { kind: 'respond' as const, response: { status: 200, headers: [], body: Buffer.from('{}') } };
        },
      } as unknown as DecisionEngine);
      call.emit('data', requestHeaders('GET', '/graphql?query=%7Bx%7D', true));
      await vi.advanceTimersByTimeAsync(500);
      expect(call.written).toEqual([{ override_message_timeout: { seconds: 5 } }]);
      await vi.advanceTimersByTimeAsync(400);
      expect(call.written.map((answer) => Object.keys(answer))).toEqual([['override_message_timeout'], ['immediate_response']]);
    });

    it('asks for nothing when the answer comes in time', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const call = postTo(400);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(call.written.map((answer) => Object.keys(answer))).toEqual([['request_headers'], ['immediate_response']]);
    });

    it('counts a stream Envoy ends while an answer is still being worked out, and no other', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const before = await abandoned();
      const givenUp = postTo(3_000);
      await vi.advanceTimersByTimeAsync(1_000);
      givenUp.emit('end');
      givenUp.emit('cancelled');
      const answered = postTo(10);
      await vi.advanceTimersByTimeAsync(3_000);
      answered.emit('end');
      answered.emit('cancelled');
      await vi.advanceTimersByTimeAsync(10);
      expect(await abandoned()).toBe(before + 1);
    });
  });
});
