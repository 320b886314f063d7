import { UsageError } from './program.js';

/** A `--*-port` value: an integer 0-65535 (0 picks a free port). */
export function portOption(raw: string | undefined, flag: string): number {
  const port = Number(raw);
  if (raw === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`${flag} expects a port number, got "${raw}"`);
  }
  return port;
}
