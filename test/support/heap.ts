import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A full collection on demand, without --expose-gc on vitest's command line.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * The bytes of heap still in use after `run`, measured between full collections, and what `run`
 * returned (kept alive meanwhile, as what a test checks is kept).
 */
export function heapKeptBy<T>(run: () => T): { keptBytes: number; result: T } {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const result = run();
  collectGarbage();
  return { keptBytes: process.memoryUsage().heapUsed - before, result };
}

/** heapKeptBy for a `run` that resolves later; the Buffers' backing stores (ArrayBuffers) count too. */
export async function memoryKeptByAsync<T>(run: () => Promise<T>): Promise<{ keptBytes: number; result: T }> {
  collectGarbage();
  const before = process.memoryUsage();
  const result = await run();
  collectGarbage();
  const after = process.memoryUsage();
  return { keptBytes: after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers), result };
}
