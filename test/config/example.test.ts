import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkConfigFile } from '../../src/commandLine/index.js';
import { loadConfig } from '../../src/config/index.js';

/**
 * examples/config.yaml, which the README's "A full example" points at, loads with the real loader
 * (the variables it names set) and every type and field it names is in examples/schema.graphql.
 */

const ROOT = join(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'examples/config.yaml');
const ENV = { SVC_PURGE_TOKEN: 'example-purge-token', REDIS_PASSWORD: 'example-password', SVC_SCOPE_KEY_SECRET: 'example-scope-key-secret', JWT_SECRET: 'example-jwt-secret-of-at-least-32-bytes' };

describe('examples/config.yaml', () => {
  it('loads, with scopes, rules, keyFields, purge and APQ set', async () => {
    const config = await loadConfig(EXAMPLE, ENV);
    expect(config.schema?.file).toBe(join(ROOT, 'examples/schema.graphql'));
    expect(config.redis?.url).toBe('redis://:example-password@redis:6379/0');
    expect(Object.keys(config.scopes)).toEqual(['AUTHENTICATED', 'SESSION', 'USER']);
    expect(config.scopes.USER).toMatchObject({ definition: 'header:authorization', jwt: { claim: 'sub', secret: ENV.JWT_SECRET } });
    expect(config.rules).toHaveLength(3);
    expect(config.keyFields.types).toEqual({ Product: ['sku'] });
    expect(config.purge.tokens).toEqual([ENV.SVC_PURGE_TOKEN]);
    expect(config.apq.enabled).toBe(true);
    expect(config.endpoints).toEqual(['/graphql']);
  });

  it('names only types and fields its schema has, and leaves nothing to warn of', async () => {
    const report = await checkConfigFile(EXAMPLE, undefined, ENV);
    expect(report.mismatches).toEqual([]);
    expect(report.warnings).toEqual([]);
    expect(report.effectiveRules).toContain('Query.me: maxAge 60s, swr 0s, scope AUTHENTICATED (rules 0, 1)');
  });
});
