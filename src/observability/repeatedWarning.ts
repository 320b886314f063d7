import type { Logger } from './log.js';

/**
 * A warning that a failure may repeat on every request (Redis down or slow: every lookup and store
 * fails) is logged the first time, then at most once per `intervalMs`, with how many times it came
 * meanwhile (`repeatedSinceLastLine`): at thousands of requests a second a line each would bury
 * the rest of the log. The metrics still count every one (README, Logs).
 */
export class RepeatedWarning {
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private since = 0;

  constructor(
    private readonly logger: Logger,
    private readonly message: string,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  warn(fields: Record<string, unknown>): void {
    const at = this.now();
    if (at - this.lastLineAt < this.intervalMs) {
      this.since += 1;
      return;
    }
    this.logger.warn(this.since > 0 ? { ...fields, repeatedSinceLastLine: this.since } : fields, this.message);
    this.lastLineAt = at;
    this.since = 0;
  }
}
