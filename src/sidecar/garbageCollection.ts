import { setFlagsFromString } from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring for the whole process, before the sidecar serves.
 *
 * V8 watches, per allocation site, how many of its young objects survive collections; once most
 * do, it allocates everything from that site straight in the old generation. A MISS's stream lives
 * across Redis and the origin, so during MISSes the per-stream sites (grpc-js's calls, HTTP/2's
 * streams, the engine's exchanges) look long-lived and get pretenured; V8 does not take that back
 * when the traffic turns to HITs, whose streams end within a millisecond. Their objects then fill
 * the old generation, which is collected by full, incremental marking on a heap holding the
 * replica's caches: measured with `npm run bench -- --only storage,get-throughput` (README,
 * Performance, Garbage collection), about 2 MB promoted per young collection instead of 0.14, and
 * in half of the runs a GET HIT cost 90-99 µs of CPU instead of 68-80.
 *
 * The flag is read whenever V8 weighs a site, so setting it at startup takes effect from then on.
 */
export function stopPretenuring(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
