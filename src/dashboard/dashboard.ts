import { hostname } from 'node:os';
import type { Config } from '../config/index.js';
import { redactedConfig, type ConfigView, type ReloadStatus } from './configView.js';
import { RecentChanges, type CacheChange, type CacheChangeInput } from './recentChanges.js';
import { hitRatio, type RequestSummary } from './summary.js';
import { Timeline, TIMELINE_SECONDS, type TimelineSeries } from './timeline.js';
import { TopOperations, type OperationRow } from './topOperations.js';

export interface StoreHealth {
  up: boolean;
  /** Round trip of one ping, in ms; undefined when it failed. */
  roundTripMs: number | undefined;
  /** Store operations that failed since start. */
  errors: number;
  reason?: string;
}

export interface DashboardSources {
  config: () => Config;
  storeHealth: () => Promise<StoreHealth>;
  /** Requests that waited for another request's origin fetch instead of making their own; undefined until reported. */
  coalescedRequests?: () => number | undefined;
  /** Defaults to POD_NAME, else the host name. */
  replica?: string;
  now?: () => number;
}

export interface DashboardSummary {
  replica: string;
  now: string;
  /** Totals over the last hour and the last five minutes. */
  lastHour: OutcomeTotals;
  lastFiveMinutes: OutcomeTotals;
  store: StoreHealth;
  coalescedRequests: number | null;
}

export interface OutcomeTotals {
  HIT: number;
  MISS: number;
  PASS: number;
  ERROR: number;
  /** HIT / (HIT + MISS + PASS); null without such requests. */
  hitRatio: number | null;
}

/**
 * One replica's view of its traffic for the page on the admin port: fed one summary per request,
 * with bounded memory (an hour of per-second slots, a top-K operation sketch, the last 100 cache
 * changes).
 */
export class Dashboard {
  readonly replica: string;
  private readonly now: () => number;
  private readonly timeline = new Timeline();
  private readonly operations = new TopOperations();
  private readonly changes: RecentChanges;
  private reload: ReloadStatus = { at: undefined, result: undefined };

  constructor(private readonly sources: DashboardSources) {
    this.now = sources.now ?? Date.now;
    this.replica = sources.replica ?? process.env.POD_NAME ?? hostname();
    this.changes = new RecentChanges(this.replica);
  }

  /** Called once per request when its stream ends; O(1), allocation-free for a known operation. */
  record(summary: RequestSummary): void {
    this.timeline.record(summary, this.now());
    this.operations.record(summary);
  }

  recordChange(change: CacheChangeInput): void {
    this.changes.add(change, this.now());
  }

  recordReload(result: 'ok' | 'refused', error?: string): void {
    this.reload = { at: new Date(this.now()).toISOString(), result, ...(error === undefined ? {} : { error }) };
  }

  async summary(): Promise<DashboardSummary> {
    const now = this.now();
    return {
      replica: this.replica,
      now: new Date(now).toISOString(),
      lastHour: withRatio(this.timeline.totals(now)),
      lastFiveMinutes: withRatio(this.timeline.totals(now, 300)),
      store: await this.sources.storeHealth().catch((error: unknown) => ({
        up: false,
        roundTripMs: undefined,
        errors: 0,
        reason: error instanceof Error ? error.message : String(error),
      })),
      coalescedRequests: this.sources.coalescedRequests?.() ?? null,
    };
  }

  timeseries(seconds = TIMELINE_SECONDS): TimelineSeries {
    return this.timeline.series(this.now(), seconds);
  }

  topOperations(limit?: number): OperationRow[] {
    return this.operations.rows(limit);
  }

  recentChanges(): CacheChange[] {
    return this.changes.list();
  }

  configView(): ConfigView {
    return { config: redactedConfig(this.sources.config()), lastReload: this.reload };
  }
}

function withRatio(totals: Omit<OutcomeTotals, 'hitRatio'>): OutcomeTotals {
  return { ...totals, hitRatio: hitRatio((outcome) => totals[outcome]) };
}
