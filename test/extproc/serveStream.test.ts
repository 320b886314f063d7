import { EventEmitter } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
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

const GET_HEADERS: ProcessingRequest = {
  request: 'request_headers',
  request_headers: {
    headers: { headers: [{ key: ':method', raw_value: Buffer.from('GET') }, { key: ':path', raw_value: Buffer.from('/graphql?query=%7Bx%7D') }] },
    end_of_stream: true,
  },
};

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
});
