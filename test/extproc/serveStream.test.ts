import { EventEmitter } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { Exchange, type DecisionEngine } from '../../src/engine/engine.js';
import type { ProcessingRequest, ProcessingResponse } from '../../src/extproc/messages.js';
import { serveStream } from '../../src/extproc/server.js';
import { Metrics, silentLogger } from '../../src/observability/index.js';

/**
 * serveStream over a stand-in for grpc-js's call. Node's HTTP/2 session keeps its streams in a Map,
 * and once a full collection has promoted that Map's table under load, V8 keeps every finished
 * stream (and what it references) alive until the next full collection (README, Performance,
 * Garbage collection): a finished call must hold none of the exchange.
 */

const EVENTS = ['data', 'end', 'cancelled', 'error'] as const;

class StandInCall extends EventEmitter {
  readonly written: ProcessingResponse[] = [];
  ended = false;

  write(answer: ProcessingResponse): boolean {
    this.written.push(answer);
    return true;
  }

  end(): this {
    this.ended = true;
    return this;
  }

  listenersLeft(): Record<(typeof EVENTS)[number], number> {
    return Object.fromEntries(EVENTS.map((event) => [event, this.listenerCount(event)])) as Record<(typeof EVENTS)[number], number>;
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
  serveStream(call as unknown as grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>, options, () => (closed += 1));
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

  it('takes them off once the stream is cancelled, and counts the request once', async () => {
    const { call, closed } = serve();
    call.emit('data', GET_HEADERS);
    await settled();
    call.emit('cancelled');
    call.emit('end');
    await settled();
    expect(closed()).toBe(1);
    expect(call.listenersLeft()).toEqual({ data: 0, end: 0, cancelled: 0, error: 0 });
  });
});
