import { describe, expect, it } from 'vitest';
import { RepeatedWarning } from '../../src/observability/index.js';
import { pino } from 'pino';

describe('RepeatedWarning', () => {
  it('logs the first time, then at most once per interval with how many times it came meanwhile', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
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
});
