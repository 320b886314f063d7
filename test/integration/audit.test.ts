import { describe, expect, it } from 'vitest';
import { runServerAudits, type AuditOutcome } from '../support/audit.js';
import { useStack } from '../support/stack.js';

/**
 * Transparency (README, HIT, MISS, PASS): graphql-http's GraphQL over HTTP audit suite gives the same result per
 * audit through svc-cache as against the origin directly, and again on a second run, when many
 * answers come from the cache.
 */
describe('GraphQL over HTTP audits through the cache', () => {
  const stack = useStack({}, { freshEachTest: false });

  const summary = (outcomes: AuditOutcome[]) => outcomes.map(({ id, status }) => `${id} ${status}`);

  it('gives the same result for every audit as the origin, twice in a row', async () => {
    const direct = await runServerAudits(stack().origin.url);
    expect(direct.length).toBeGreaterThan(50);

    stack().origin.reset();
    const first = await runServerAudits(stack().url);
    const originCallsFirstRun = stack().origin.requestCount();
    const second = await runServerAudits(stack().url);
    const originCallsSecondRun = stack().origin.requestCount() - originCallsFirstRun;

    expect(summary(first)).toEqual(summary(direct));
    expect(summary(second)).toEqual(summary(direct));
    // The second run really was served partly from the cache.
    expect(originCallsSecondRun).toBeLessThan(originCallsFirstRun);
  });
});
