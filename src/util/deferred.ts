/** A promise with the functions that settle it, and whether they did. */
export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  /** True once resolve() or reject() was called. */
  readonly settled: boolean;
  resolve(value: T): void;
  reject(error: Error): void;
}

/** A promise settled from outside its executor (Node 20 has no Promise.withResolvers). */
export function deferred<T = void>(): Deferred<T> {
  let settle!: { resolve: (value: T) => void; reject: (error: Error) => void };
  const promise = new Promise<T>((resolve, reject) => (settle = { resolve, reject }));
  const state = {
    promise,
    settled: false,
    resolve: (value: T): void => {
      state.settled = true;
      settle.resolve(value);
    },
    reject: (error: Error): void => {
      state.settled = true;
      settle.reject(error);
    },
  };
  return state;
}
