import { shownName } from './shownNames.js';

/** Purges and mutation invalidations kept for the page (README, Dashboard). */
export const RECENT_CHANGES = 100;
/** Fields or tags listed per change; the rest is counted. */
const NAMES_PER_CHANGE = 20;

export interface CacheChange {
  kind: 'purge' | 'invalidation';
  /** ISO 8601. */
  at: string;
  /** Purge fields that ran, or the mutation policy for an invalidation; each as shownName keeps it. */
  fields: string[];
  /** Each as shownName keeps it: a purge's tags name what its client chose (operation names, keys). */
  tags: string[];
  /** Tags beyond those listed. */
  moreTags: number;
  removedEntries: number;
  /** Entries a soft purge marked stale (served within swr while one request refreshes them). */
  staleEntries: number;
  /**
   * Whether the store applied it: `not-confirmed`, a purge answered 503 that the store or a
   * replica-local cache did not confirm, which may apply or have applied.
   */
  result: 'ok' | 'failed' | 'not-confirmed';
  /** `hard` removes entries; `soft` marks them stale (`soft: true`); `mixed`, a purge with fields of both. */
  mode: 'hard' | 'soft' | 'mixed';
  replica: string;
}

export type CacheChangeInput = Omit<CacheChange, 'at' | 'tags' | 'moreTags' | 'mode' | 'staleEntries' | 'replica' | 'fields'> & {
  fields: readonly string[];
  tags: readonly string[] | number;
  /** `hard` when left out: mutation invalidations always are. */
  mode?: CacheChange['mode'];
  staleEntries?: number;
};

/** The last `RECENT_CHANGES` purges and invalidations, newest first, in a fixed-size ring. */
export class RecentChanges {
  private readonly ring: Array<CacheChange | undefined> = new Array<CacheChange | undefined>(RECENT_CHANGES);
  private next = 0;

  constructor(private readonly replica: string) {}

  add(change: CacheChangeInput, nowMs: number): void {
    const tags = typeof change.tags === 'number' ? [] : change.tags.slice(0, NAMES_PER_CHANGE).map(shownName);
    const tagCount = typeof change.tags === 'number' ? change.tags : change.tags.length;
    this.ring[this.next] = {
      kind: change.kind,
      at: new Date(nowMs).toISOString(),
      fields: change.fields.slice(0, NAMES_PER_CHANGE).map(shownName),
      tags,
      moreTags: tagCount - tags.length,
      removedEntries: change.removedEntries,
      staleEntries: change.staleEntries ?? 0,
      result: change.result,
      mode: change.mode ?? 'hard',
      replica: this.replica,
    };
    this.next = (this.next + 1) % RECENT_CHANGES;
  }

  list(): CacheChange[] {
    const changes: CacheChange[] = [];
    for (let i = 1; i <= RECENT_CHANGES; i += 1) {
      const change = this.ring[(this.next - i + RECENT_CHANGES) % RECENT_CHANGES];
      if (change) changes.push(change);
    }
    return changes;
  }
}
