import { afterAll, beforeAll, beforeEach } from 'vitest';

/** How a `useStarted` helper starts, closes and resets what it gives its tests. */
export interface Lifecycle<T> {
  /** The helper's name, for the getter's error. */
  name: string;
  start(): Promise<T>;
  close(started: T): Promise<void>;
  /** Run before each test; without it a test finds what the tests before it left. */
  reset?: ((started: T) => void | Promise<void>) | undefined;
}

/**
 * Registers in the calling describe block (or file) a beforeAll that starts, an afterAll that closes
 * and, with `reset`, a beforeEach that resets, and returns a getter for what was started. Call the
 * getter in tests and hooks: it throws before beforeAll ran, where a `let` would still be undefined.
 * Hooks run in the order they are registered and afterAll hooks in the reverse order, so a block that
 * starts something this needs in an earlier beforeAll has it closed after this is.
 */
export function useStarted<T>({ name, start, close, reset }: Lifecycle<T>): () => T {
  let started: T | undefined;
  const current = (): T => {
    if (started === undefined) throw new Error(`${name}: it starts in beforeAll; call the getter in a test or a hook`);
    return started;
  };
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    if (started !== undefined) await close(started);
  });
  if (reset) {
    beforeEach(async () => {
      await reset(current());
    });
  }
  return current;
}
