import type { Logger } from './log.js';

/**
 * A warning that a failure may repeat on every request (Redis down or slow: every lookup and store
 * fails) is logged the first time, then at most once per `intervalMs`, with how many times it came
 * meanwhile (`repeatedSinceLastLine`): at thousands of requests a second a line each would bury
 * the rest of the log. When the failures stop, the ones held back since the last line are logged
 * once the interval is over, so the log's count is never short. The metrics still count every one
 * (README, Logs).
 */
export class RepeatedWarning {
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private since = 0;
  private lastFields: Record<string, unknown> = {};
  private tail: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly message: string,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  warn(fields: Record<string, unknown>): void {
    const at = this.now();
    const wait = this.lastLineAt + this.intervalMs - at;
    if (wait > 0) {
      this.since += 1;
      this.lastFields = fields;
      // Unref'd: a warning left to log never keeps the process alive at shutdown.
      this.tail ??= setTimeout(() => this.logHeldBack(), Math.min(wait, this.intervalMs)).unref();
      return;
    }
    this.line(fields, at);
  }

  private logHeldBack(): void {
    this.tail = undefined;
    if (this.since > 0) this.line(this.lastFields, this.now());
  }

  private line(fields: Record<string, unknown>, at: number): void {
    if (this.tail !== undefined) clearTimeout(this.tail);
    this.tail = undefined;
    this.logger.warn(this.since > 0 ? { ...fields, repeatedSinceLastLine: this.since } : fields, this.message);
    this.lastLineAt = at;
    this.since = 0;
  }
}
