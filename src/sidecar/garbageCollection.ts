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
