import { pino } from 'pino';
import type { Logger } from '../../src/observability/log.js';

export interface RecordingLogger {
  logger: Logger;
  /** The `msg` of every line logged so far, in order. */
  messages: string[];
  /**
   * Resolves once `message` has been logged `occurrence` times in all (1 for the first time), so a
   * test waits for the event itself rather than for a guessed delay.
   */
  waitFor(message: string, occurrence: number, timeoutMs?: number): Promise<void>;
}

/** A real pino logger at info level whose lines are kept in memory instead of printed. */
export function recordingLogger(): RecordingLogger {
  const messages: string[] = [];
  const waiters = new Set<() => void>();
  const logger = pino(
    { level: 'info' },
    {
      write(line: string) {
        messages.push((JSON.parse(line) as { msg: string }).msg);
        for (const wake of waiters) wake();
      },
    },
  );
  const count = (message: string): number => messages.filter((logged) => logged === message).length;
  const waitFor = (message: string, occurrence: number, timeoutMs = 5000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (count(message) < occurrence) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`"${message}" logged ${count(message)} times, not ${occurrence}, within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return { logger, messages, waitFor };
}
