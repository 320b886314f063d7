import type { EngineEvents } from '../engine/index.js';
import type { Metrics } from '../observability/index.js';

/** What the decision engine reports (persisted queries, purges, invalidations, stale-if-error), recorded as metrics. */
export function engineEventsRecordedIn(metrics: Metrics): EngineEvents {
  return {
    persistedQuery: (event) => metrics.recordPersistedQuery(event),
    purge: (event) =>
      metrics.recordPurge(
        event.result,
        event.result === 'purged' ? { removed: event.removedEntries, stale: event.staleEntries } : undefined,
      ),
    invalidation: (event) => {
      if ('failed' in event) metrics.recordInvalidationFailure(event.policy, event.from);
      else metrics.recordInvalidation(event.policy, event.from, event.removedEntries);
    },
    coalesced: () => metrics.recordCoalesced(),
    staleIfError: (failure) => metrics.recordStaleIfError(failure),
  };
}
