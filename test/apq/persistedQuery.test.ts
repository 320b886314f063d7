import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { registerPersistedQuery, resolvePersistedQuery } from '../../src/apq/persistedQuery.js';
import { RepeatedWarning } from '../../src/observability/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { MemoryPersistedQueryRegistry, type PersistedQueryRegistry } from '../../src/apq/index.js';

const QUERY = '{ todos { id } }';
const HASH = createHash('sha256').update(QUERY).digest('hex');

function deps(registry: PersistedQueryRegistry = new MemoryPersistedQueryRegistry({ maxBytes: () => 1024 * 1024 })) {
  const warning = (message: string) => new RepeatedWarning(silentLogger(), message);
  const warnings = { registryUnavailable: warning('persisted query registry unavailable'), notRegistered: warning('persisted query not registered') };
  return { apq: { enabled: true, ttl: 60, forwardPersistedQuery: false, maxBytes: 1024 * 1024 }, registry, warnings };
}

const unreachableRegistry: PersistedQueryRegistry = {
  get: () => Promise.reject(new Error('down')),
  register: () => Promise.reject(new Error('down')),
};

describe('resolvePersistedQuery', () => {
  it('leaves requests without a persisted query alone', async () => {
    expect(await resolvePersistedQuery(QUERY, {}, deps())).toEqual({ kind: 'none' });
    expect(await resolvePersistedQuery(QUERY, { persistedQuery: null }, deps())).toEqual({ kind: 'none' });
  });

  it('asks for registration with the query, registers nothing itself, and resolves the hash alone once registered, an upper-case hash too', async () => {
    const d = deps();
    const reference = { persistedQuery: { version: 1, sha256Hash: HASH } };
    expect(await resolvePersistedQuery(undefined, reference, d)).toMatchObject({ kind: 'refused', reason: 'not-found' });
    const upperWithQuery = { persistedQuery: { version: 1, sha256Hash: HASH.toUpperCase() } };
    expect(await resolvePersistedQuery(QUERY, upperWithQuery, d)).toEqual({ kind: 'resolved', query: QUERY, registration: { hash: HASH, query: QUERY } });
    expect(await resolvePersistedQuery(undefined, reference, d)).toMatchObject({ kind: 'refused', reason: 'not-found' });
    expect(await registerPersistedQuery({ hash: HASH, query: QUERY }, d)).toBe(true);
    expect(await resolvePersistedQuery(undefined, reference, d)).toEqual({ kind: 'resolved', query: QUERY });
    const upper = { persistedQuery: { version: 1, sha256Hash: HASH.toUpperCase() } };
    expect(await resolvePersistedQuery(undefined, upper, d)).toEqual({ kind: 'resolved', query: QUERY });
  });

  it('answers not-found when the registry cannot be read, and reports a registration it cannot write', async () => {
    const d = deps(unreachableRegistry);
    const reference = { persistedQuery: { version: 1, sha256Hash: HASH } };
    const notFound = await resolvePersistedQuery(undefined, reference, d);
    expect(notFound.kind === 'refused' && [notFound.reason, notFound.response.status]).toEqual(['not-found', 200]);
    expect(await registerPersistedQuery({ hash: HASH, query: QUERY }, d)).toBe(false);
  });

  it('checks support, version, hash form and hash match in Apollo Server\'s order', async () => {
    const off = { ...deps(), apq: { enabled: false, ttl: 60, forwardPersistedQuery: false, maxBytes: 1024 * 1024 } };
    expect(await resolvePersistedQuery(QUERY, { persistedQuery: { version: 2 } }, off)).toMatchObject({ reason: 'not-supported' });
    expect(await resolvePersistedQuery(QUERY, { persistedQuery: { version: 2, sha256Hash: 'x' } }, deps())).toMatchObject({ reason: 'bad-version' });
    expect(await resolvePersistedQuery(QUERY, { persistedQuery: { version: 1, sha256Hash: 'x' } }, deps())).toMatchObject({ reason: 'bad-hash' });
    expect(await resolvePersistedQuery('{ users { id } }', { persistedQuery: { version: 1, sha256Hash: HASH } }, deps())).toMatchObject({
      reason: 'hash-mismatch',
    });
  });
});
