import { ListenError, type ListeningServer } from '../util/index.js';
import { UsageError } from './program.js';

/** A `--*-port` value: an integer 0-65535 (0 picks a free port). */
export function portOption(raw: string | undefined, flag: string): number {
  const port = Number(raw);
  if (raw === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`${flag} expects a port number, got "${raw}"`);
  }
  return port;
}

/**
 * A server that could not take its port, named with the option that chose the port, so the message
 * says what to change (`--admin-port 9901`); any other error is returned as it is.
 */
export function withPortOption(error: unknown, options: Partial<Record<ListeningServer, string>>): unknown {
  if (!(error instanceof ListenError)) return error;
  const option = options[error.server];
  return new Error(`cannot listen on ${error.address} for the ${error.server} port${option ? ` (${option})` : ''}: ${error.reason}`);
}
