import { pino } from 'pino';
import { withoutQueryValues } from '../util/index.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Structured JSON lines on stdout. Callers never pass raw scope values, tokens or cookies. */
export type Logger = pino.Logger;

export interface LoggerOptions {
  /** Where lines go; stdout when not given. */
  destination?: pino.DestinationStream;
}

/**
 * Nothing logs request headers today; redaction is the second line of defence, so that a header map
 * added to a log line later (as `headers`, or under one more key such as `request.headers`) cannot
 * leak a credential into log storage, where it would outlive the request by months.
 */
export function createLogger(level: LogLevel = 'info', name = 'svc-cache', options: LoggerOptions = {}): Logger {
  return pino(
    {
      name,
      level,
      base: { name },
      redact: redaction(() => NO_NAMES),
      serializers: { url: withoutCredentials },
    },
    options.destination,
  );
}

/**
 * A logger that also redacts the header names `secretHeaders()` gives when a line is written, for
 * names only known once the configuration is read, and that a reload may change (README, Hot reload).
 * A child's redaction replaces its parent's, so the usual names are redacted here too.
 */
export function withSecretHeaders(logger: Logger, secretHeaders: () => readonly string[]): Logger {
  return logger.child({}, { redact: redaction(secretHeaders) });
}

/** For tests and library use where nothing should be printed. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Every entry of a header map under these paths goes through the censor, which looks its name up in
 * the names of the moment: a map of names to values, in any case, or a list of `[name, value]`
 * pairs (the engine's `HeaderList`).
 */
function redaction(secretHeaders: () => readonly string[]): { paths: string[]; censor: (value: unknown, path: string[]) => unknown } {
  let names = new Set<string>();
  let namesFrom: readonly string[] | undefined;
  const isSecret = (name: unknown): boolean => {
    const current = secretHeaders();
    if (current !== namesFrom) {
      namesFrom = current;
      names = new Set([...ALWAYS_SECRET_HEADERS, ...current].map((header) => header.toLowerCase()));
    }
    return typeof name === 'string' && names.has(name.toLowerCase());
  };
  const censor = (value: unknown, path: string[]): unknown => {
    if (isHeaderPair(value)) return isSecret(value[0]) ? [value[0], REDACTED] : value;
    return isSecret(path[path.length - 1]) ? REDACTED : value;
  };
  return { paths: ['headers.*', '*.headers.*', 'requestHeaders.*', 'responseHeaders.*'], censor };
}

function isHeaderPair(value: unknown): value is [string, unknown] {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'string';
}

const REDACTED = '[redacted]';

const NO_NAMES: readonly string[] = [];

const ALWAYS_SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'svc-purge-token', 'x-api-key'];

/**
 * A URL may carry a password (`https://user:secret@origin/graphql`) or a key in its query
 * (`?api_key=...`); the rest of it is worth logging.
 */
function withoutCredentials(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    const url = new URL(value);
    if (url.username === '' && url.password === '') return withoutQueryValues(value);
    url.username = '';
    url.password = '';
    return withoutQueryValues(url.toString());
  } catch {
    return value;
  }
}
