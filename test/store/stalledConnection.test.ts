import { describe, expect, it } from 'vitest';
import { StalledConnection, stalledAfterMs } from '../../src/store/redisConnection.js';

describe('StalledConnection', () => {
  function watch(): { settled: (timedOut: boolean, at: number) => void; reconnects: () => number } {
    let now = 0;
    let reconnects = 0;
    const stall = new StalledConnection(1000, () => (reconnects += 1), () => now);
    return {
      settled: (timedOut, at) => {
        now = at;
        stall.settled(timedOut);
      },
      reconnects: () => reconnects,
    };
  }

  it('reconnects once only timeouts have come for the whole window, then watches afresh', () => {
    const connection = watch();
    for (const at of [0, 400, 999]) connection.settled(true, at);
    expect(connection.reconnects()).toBe(0);
    connection.settled(true, 1000);
    expect(connection.reconnects()).toBe(1);
    connection.settled(true, 1500);
    connection.settled(true, 2400);
    expect(connection.reconnects()).toBe(1);
    connection.settled(true, 2500);
    expect(connection.reconnects()).toBe(2);
  });

  it('does not reconnect a Redis that still answers some commands, slowly, nor one that is down', () => {
    const connection = watch();
    for (let at = 0; at < 5000; at += 300) {
      connection.settled(true, at);
      // A reply (or a command failing at once: the connection is down, nothing queues) ends the watch.
      connection.settled(false, at + 1);
    }
    expect(connection.reconnects()).toBe(0);
  });

  it('waits four command timeouts, and at least 1 s', () => {
    expect([stalledAfterMs(250), stalledAfterMs(100), stalledAfterMs(1000)]).toEqual([1000, 1000, 4000]);
  });
});
