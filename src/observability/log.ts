import { pino } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Structured JSON lines on stdout. Callers never pass raw scope values, tokens or cookies. */
export type Logger = pino.Logger;

export function createLogger(level: LogLevel = 'info', name = 'svc-cache'): Logger {
  return pino({ name, level, base: { name } });
}

/** For tests and library use where nothing should be printed. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
