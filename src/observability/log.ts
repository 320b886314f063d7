import { pino } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Structured JSON lines on stdout. Callers never pass raw scope values, tokens or cookies. */
export type Logger = pino.Logger;

export interface LoggerOptions {
  /**
   * Header names whose values are secrets beyond the usual ones (`authorization`, `cookie`, ...):
   * the purge token header and the headers scopes are keyed on.
   */
  secretHeaders?: readonly string[];
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
      redact: redaction(options.secretHeaders ?? []),
      serializers: { url: withoutCredentials },
    },
    options.destination,
  );
}

/**
 * A logger that also redacts `secretHeaders`, for names only known once the configuration is read.
 * A child's redaction replaces its parent's, so the usual names are repeated here.
 */
export function withSecretHeaders(logger: Logger, secretHeaders: readonly string[]): Logger {
  return logger.child({}, { redact: redaction(secretHeaders) });
}

/** For tests and library use where nothing should be printed. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

function redaction(secretHeaders: readonly string[]): { paths: string[]; censor: string } {
  const names = new Set([...ALWAYS_SECRET_HEADERS, ...secretHeaders].map((header) => header.toLowerCase()));
  const paths = [...names].flatMap((header) => {
    const key = JSON.stringify(header);
    return [`headers[${key}]`, `*.headers[${key}]`, `requestHeaders[${key}]`, `responseHeaders[${key}]`];
  });
  return { paths, censor: '[redacted]' };
}

const ALWAYS_SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'svc-purge-token', 'x-api-key'];

/** A URL may carry a password (`https://user:secret@origin/graphql`); the rest of it is worth logging. */
function withoutCredentials(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    const url = new URL(value);
    if (url.username === '' && url.password === '') return value;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return value;
  }
}
