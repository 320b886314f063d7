import { afterEach, describe, expect, it, vi } from 'vitest';
import { RepeatedWarning, type Logger } from '../../src/observability/index.js';
import { pino } from 'pino';

function capturedLines(): { lines: Array<Record<string, unknown>>; logger: Logger } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { lines, logger };
}

describe('RepeatedWarning', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('logs the first time, then at most once per interval with how many times it came meanwhile', () => {
    const { lines, logger } = capturedLines();
    let now = 1_000;
    const warning = new RepeatedWarning(logger, 'cache store unavailable; passing to origin', 10_000, () => now);
    warning.warn({ err: 'down' });
    for (const at of [1_001, 5_000, 10_999]) {
      now = at;
      warning.warn({ err: 'down' });
    }
    now = 11_000;
    warning.warn({ err: 'still down' });
    now = 30_000;
    warning.warn({ err: 'down again' });
    expect(lines.map(({ level, msg, err, repeatedSinceLastLine }) => ({ level, msg, err, repeatedSinceLastLine }))).toEqual([
      { level: 40, msg: 'cache store unavailable; passing to origin', err: 'down', repeatedSinceLastLine: undefined },
      { level: 40, msg: 'cache store unavailable; passing to origin', err: 'still down', repeatedSinceLastLine: 3 },
      { level: 40, msg: 'cache store unavailable; passing to origin', err: 'down again', repeatedSinceLastLine: undefined },
    ]);
  });

  it('logs the failures held back since the last line once the interval is over, when no more come', () => {
    vi.useFakeTimers({ now: 1_000 });
    const { lines, logger } = capturedLines();
    const warning = new RepeatedWarning(logger, 'cache store unavailable; response not stored', 10_000, () => Date.now());
    warning.warn({ err: 'first' });
    vi.advanceTimersByTime(2_000);
    warning.warn({ err: 'second' });
    warning.warn({ err: 'third' });
    vi.advanceTimersByTime(7_999);
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(lines.map(({ err, repeatedSinceLastLine }) => ({ err, repeatedSinceLastLine }))).toEqual([
      { err: 'first', repeatedSinceLastLine: undefined },
      { err: 'third', repeatedSinceLastLine: 2 },
    ]);
    vi.advanceTimersByTime(60_000);
    expect(lines).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps one line per interval while the failures go on, the held-back count logged once', () => {
    vi.useFakeTimers({ now: 0 });
    const { lines, logger } = capturedLines();
    const warning = new RepeatedWarning(logger, 'cache store unavailable; passing to origin', 10_000, () => Date.now());
    for (let at = 0; at < 25_000; at += 1_000) {
      warning.warn({ err: 'down' });
      vi.advanceTimersByTime(1_000);
    }
    vi.advanceTimersByTime(60_000);
    const counts = lines.map(({ repeatedSinceLastLine }) => repeatedSinceLastLine);
    expect(counts).toEqual([undefined, 9, 10, 5]);
    expect(counts.reduce<number>((sum, count) => sum + ((count as number | undefined) ?? 1), 0)).toBe(25);
  });
});
