import { setFlagsFromString } from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring for the whole process; `svc-cache serve` does so before
 * it starts the sidecar (docs/performance.md, Garbage collection).
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
 * (V8 sizes its young generation when the process starts, and Node refuses the minimum in
 * NODE_OPTIONS): the production image's entry point passes them (Dockerfile), and the bench's
 * servers run with them.
 *
 * A young generation of 16 MiB per semi-space, always. V8 otherwise sizes it from the memory it
 * sees, which Node reports as the container's limit: in a memory cgroup of 512 MiB (the pod's limit
 * then) it started at 1 MiB and grew to 2 MiB under allocation, a collection every megabyte or two (on a
 * large host V8 allows 16 MiB). And it shrinks it to 1 MiB whenever traffic pauses, growing it back
 * through dozens of collections when traffic resumes. Measured in turns of load and pause
 * (`npm run bench -- --only hit`): the first sidecar's POST HIT cost 72.8-78.5 µs of CPU in 7 of 7
 * runs with a 16 MiB minimum, against 102.9-129.6 without, and no scenario cost more; those runs
 * measured it before its first full collection under load, and the flags' effect after one was not
 * measured apart. The price is memory, 48 MiB of young generation (two semi-spaces and as much for
 * large young objects), which deploy/sidecar/pod.yaml budgets for (docs/performance.md, Garbage
 * collection).
 */
export const SIDECAR_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--min-semi-space-size=16'];
