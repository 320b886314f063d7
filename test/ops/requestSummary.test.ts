import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RequestSummary } from '../../src/engine/engine.js';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';
import { eventually, sampleValue, scrape } from './prometheusText.js';

/** Each finished request's summary reaches the sidecar's observer, after /metrics counted it. */
describe('request summaries', () => {
  const summaries: RequestSummary[] = [];
  const stack = useStack(
    { rules: [{ types: { Query: ['todos'] }, maxAge: 60 }] },
    { onRequestCompleted: (summary) => summaries.push(summary), freshEachTest: false },
  );

  const next = async (count: number): Promise<RequestSummary[]> =>
    eventually(async () => {
      expect(summaries.length).toBeGreaterThanOrEqual(count);
      return summaries.slice(0, count);
    });

  it('summarises a MISS, a HIT, a PASS by rule and an error svc-cache answered', async () => {
    await postGraphQL(stack().url, { query: 'query Todos { todos { id } }' });
    await next(1);
    await postGraphQL(stack().url, { query: 'query Todos { todos { id } }' });
    await next(2);
    await postGraphQL(stack().url, { query: '{ users { id } }' });
    await next(3);
    const refused = await fetch(`${stack().url}?query=${encodeURIComponent('mutation { addTodo(title: "x") { id } }')}`);
    expect(refused.status).toBe(405);
    const [miss, hit, pass, error] = await next(4);
    const digest = createHash('sha256').update('query Todos {\n  todos {\n    id\n  }\n}').digest('base64url');
    const hash = createHash('sha256').update(`Todos\u0000${digest}`).digest('hex').slice(0, 12);
    expect(miss).toEqual({
      outcome: 'MISS',
      passReason: undefined,
      errorCode: undefined,
      operationName: 'Todos',
      documentHash: hash,
      originLatencyMs: expect.any(Number),
      bytesServedFromCache: 0,
    });
    expect(hit).toMatchObject({ outcome: 'HIT', operationName: 'Todos', documentHash: hash, originLatencyMs: undefined });
    expect(hit!.bytesServedFromCache).toBeGreaterThan(0);
    expect(pass).toMatchObject({ outcome: 'PASS', passReason: 'no-rule', operationName: '', originLatencyMs: expect.any(Number) });
    expect(error).toMatchObject({ outcome: 'ERROR', errorCode: 'METHOD_NOT_ALLOWED', passReason: undefined });
    const metrics = await scrape(stack().sidecar.adminPort);
    expect(sampleValue(metrics, 'svc_cache_pass_total', { reason: 'no-rule' })).toBe(1);
  });
});
