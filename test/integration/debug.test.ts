import { describe, expect, it } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { useStack } from '../support/stack.js';

/** `svc-debug: 1` with a valid purge token explains the decision; without the token it is ignored. */
describe('debug headers', () => {
  const TOKEN = 'debug-purge-token-0123456789';
  const debugHeaders = { 'svc-debug': '1', 'svc-purge-token': TOKEN };

  const stack = useStack(
    {
      purge: { tokens: [TOKEN] },
      scopes: { AUTHENTICATED: 'header:authorization' },
      rules: [
        { description: 'all todos', types: { Query: ['todos'] }, maxAge: 60 },
        { types: { Query: ['me'] }, maxAge: 30, scope: 'AUTHENTICATED' },
        { description: 'products live', types: { Query: ['products'] }, maxAge: 0 },
      ],
    },
    { freshEachTest: false },
  );

  const explanation = (headers: Record<string, string>) =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('svc-debug')));

  it('explains a MISS and a HIT: scope, bucket and matched rules', async () => {
    const miss = await postGraphQL(stack().url, { query: '{ todos { id } }' }, debugHeaders);
    const hit = await postGraphQL(stack().url, { query: '{ todos { id } }' }, debugHeaders);
    const expected = { 'svc-debug-scope': 'PUBLIC', 'svc-debug-bucket': 'PUBLIC', 'svc-debug-rules': 'all todos' };
    expect([miss.headers['svc-cache'], explanation(miss.headers)]).toEqual(['MISS', expected]);
    expect([hit.headers['svc-cache'], explanation(hit.headers)]).toEqual(['HIT', expected]);
  });

  // A new user's run: a PASS for maxAge 0 did not say which rule set it.
  it('names the rules that gave a query maxAge 0', async () => {
    const pass = await postGraphQL(stack().url, { query: '{ products { sku } todos { id } }' }, debugHeaders);
    expect([pass.headers['svc-cache'], explanation(pass.headers)]).toEqual([
      'PASS',
      { 'svc-debug-rules': 'all todos; products live', 'svc-debug-pass-reason': 'max-age-zero' },
    ]);
  });

  it('names a scoped bucket by its keyed hash, never the raw value', async () => {
    const response = await postGraphQL(
      stack().url,
      { query: '{ me { id } }' },
      { ...debugHeaders, authorization: 'Bearer alice' },
    );
    const headers = explanation(response.headers);
    expect(headers['svc-debug-scope']).toBe('AUTHENTICATED');
    expect(headers['svc-debug-bucket']).toMatch(/^AUTHENTICATED:[A-Za-z0-9_-]{43}$/);
    expect(headers['svc-debug-rules']).toBe('rules[1]');
    expect(JSON.stringify(headers)).not.toContain('alice');
  });

  it.each([
    ['a query no rule matches', { query: '{ users { id } }' }, 'no-rule'],
    ['a mutation', { query: 'mutation { addTodo(title: "x") { title } }' }, 'mutation'],
    ['a body that is not JSON', '{oops', 'uninterpretable-body'],
  ])('says why %s was PASS', async (_name, body, reason) => {
    const response = await postGraphQL(stack().url, body, debugHeaders);
    expect(response.headers['svc-cache']).toBe('PASS');
    expect(explanation(response.headers)).toEqual({ 'svc-debug-pass-reason': reason });
  });

  it('ignores svc-debug without a valid purge token', async () => {
    for (const headers of [{ 'svc-debug': '1' }, { 'svc-debug': '1', 'svc-purge-token': 'wrong' }] as Array<Record<string, string>>) {
      const response = await postGraphQL(stack().url, { query: '{ users { name } }' }, headers);
      expect(response.headers['svc-cache']).toBe('PASS');
      expect(explanation(response.headers)).toEqual({});
    }
  });
});
