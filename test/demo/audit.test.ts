import { serverAudits } from 'graphql-http';
import { describe, expect, it } from 'vitest';
import { runServerAudits } from '../support/audit.js';
import { startDemoOrigin, useDemoOrigin } from '../support/origin.js';

const origin = useDemoOrigin();

describe('GraphQL over HTTP audits against the demo origin', () => {
  it('passes every audit graphql-http has, as graphql-http itself does', async () => {
    const outcomes = await runServerAudits(origin().url);
    expect(outcomes.map(({ id }) => id)).toEqual(serverAudits({ url: origin().url }).map(({ id }) => id));
    expect(outcomes.filter(({ status }) => status !== 'ok')).toEqual([]);
  });

  it('gives the same outcomes when run twice in a row', async () => {
    const first = await runServerAudits(origin().url);
    const second = await runServerAudits(origin().url);
    expect(second).toEqual(first);
  });

  it('sends the origin one request per audit', async () => {
    await runServerAudits(origin().url);
    expect(origin().requestCount()).toBe(serverAudits({ url: origin().url }).length);
  });
});

describe('the audit harness', () => {
  it('grades a broken server by requirement level, with reasons', async () => {
    origin().setBehaviour({ forcedResponse: { status: 500, headers: { 'content-type': 'text/plain' }, body: 'broken' } });
    const outcomes = await runServerAudits(origin().url);
    const byId = new Map(outcomes.map((outcome) => [outcome.id, outcome]));
    expect(byId.get('2C94')).toMatchObject({ status: 'error', reason: 'Response status code is not 200' });
    expect(byId.get('22EB')).toMatchObject({ status: 'warn', reason: 'Response status code is not 200' });
    expect(byId.get('5A70')).toMatchObject({ status: 'notice', reason: 'Response status code is not 200' });
    expect(byId.get('8764')).toMatchObject({ status: 'ok' });
    expect(byId.get('8764')).not.toHaveProperty('reason');
  });

  it('turns a server that cannot be reached into fatal errors instead of throwing', async () => {
    const gone = await startDemoOrigin();
    await gone.close();
    const outcomes = await runServerAudits(gone.url, { requestTimeoutMs: 1_000 });
    expect(outcomes.length).toBeGreaterThan(0);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('error');
      expect(outcome.reason).toMatch(/^fatal: /);
    }
  });

  it('fails an audit whose request outlives the timeout', async () => {
    origin().setBehaviour({ delayMs: 500 });
    const outcomes = await runServerAudits(origin().url, { requestTimeoutMs: 20 });
    expect(outcomes[0]).toMatchObject({ status: 'error', reason: expect.stringMatching(/^fatal: TimeoutError/) });
  });
});
