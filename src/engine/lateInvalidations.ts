import { performance } from 'node:perf_hooks';

/**
 * Invalidations made again after a mutation whose answer never came (Envoy answered it itself: its
 * route timeout's 504; or the client went away): the origin may finish running it after svc-cache
 * invalidated, and a read between the two may store the answer from before it. The same tags are
 * invalidated again AGAIN_AFTER_MS later, merged per second, so what clients can make this hold is
 * bounded by the tags there are (root fields' types) and the delays. Lost when the process ends.
 */
export class LateInvalidations {
  /** The tags due at each second of `now` (rounded up). */
  private readonly due = new Map<number, Set<string>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly apply: (tags: string[]) => Promise<void>,
    /** A monotonic clock in ms: a step of the wall clock must not hold or hasten a repeat. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  add(tags: readonly string[]): void {
    if (tags.length === 0) return;
    for (const delay of AGAIN_AFTER_MS) {
      const second = Math.ceil((this.now() + delay) / 1000);
      let dueThen = this.due.get(second);
      if (dueThen === undefined) {
        dueThen = new Set();
        this.due.set(second, dueThen);
      }
      for (const tag of tags) dueThen.add(tag);
    }
    // Armed for the earliest second due, which the new tags may have moved forward.
    clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule();
  }

  /** Nothing more is invalidated: the store is closing. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.due.size === 0) return;
    const next = Math.min(...this.due.keys()) * 1000;
    this.timer = setTimeout(() => this.run(), Math.max(0, next - this.now()));
    this.timer.unref();
  }

  private run(): void {
    this.timer = undefined;
    const tags = new Set<string>();
    for (const [second, dueThen] of this.due) {
      if (second * 1000 > this.now()) continue;
      for (const tag of dueThen) tags.add(tag);
      this.due.delete(second);
    }
    if (tags.size > 0) void this.apply([...tags]);
    this.schedule();
  }
}

/**
 * After the first invalidation: an origin that ran on past Envoy's route timeout (30 s in
 * deploy/sidecar/envoy.yaml) usually finishes within seconds; one that finishes later than the last
 * leaves an answer read meanwhile stale until it expires (README, Answers with errors).
 */
const AGAIN_AFTER_MS = [1_000, 5_000, 30_000] as const;
