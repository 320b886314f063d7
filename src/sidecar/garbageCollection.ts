import { setFlagsFromString } from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring for the whole process; `svc-cache serve` does so before
 * it starts the sidecar (README, Performance, Garbage collection).
 *
 * V8 watches, per allocation site, how many of its young objects survive collections; once most
 * do, it allocates everything from that site straight in the old generation. A MISS's stream lives
 * across Redis and the origin, so during MISSes the per-stream sites (grpc-js's calls, HTTP/2's
 * streams, the engine's exchanges) look long-lived and get pretenured. V8 takes a decision back only
 * after a full collection in which most of the old generation died, which the replica's caches
 * (memoised documents, the local cache) make rare: when the traffic turns to HITs, whose
 * streams end within a millisecond, their objects keep filling the old generation, which is then
 * marked incrementally, whole caches included. Measured after 4,096 MISSes
 * (`npm run bench -- --only storage,get-throughput`): about 2 MB promoted per young collection
 * instead of 0.14 with pretenuring off, and in half of the runs a GET HIT cost 90-118 µs of CPU
 * instead of 66-80.
 *
 * The flag is read whenever V8 weighs a site, so setting it at startup takes effect from then on.
 */
export function stopPretenuring(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/**
 * The Node flags `svc-cache serve` should run with, which a running process cannot set for itself
 * (V8 sizes its young generation when the process starts, and Node refuses them in NODE_OPTIONS):
 * the production image's entry point passes them (Dockerfile), and the bench's servers run with them.
 *
 * `--min-semi-space-size=16` keeps the young generation at V8's usual maximum, 16 MiB per
 * semi-space, instead of letting it shrink to 1 MiB whenever traffic pauses and grow back through
 * dozens of collections when it resumes. Measured in turns of load and pause (`npm run bench --
 * --only hit`): the first sidecar's POST HIT cost 73-78 µs of CPU in 6 of 6 runs with it, against
 * 102-130 without, and no scenario cost more. The price is memory: the 32 MiB V8 would take under
 * load anyway, now kept when idle too (README, Performance, Garbage collection).
 */
export const SIDECAR_NODE_FLAGS: readonly string[] = ['--min-semi-space-size=16'];
