import { describe, expect, it } from 'vitest';
import { formatKeyPath, valueAt, withValueAt } from '../../src/config/keyPath.js';

describe('key paths', () => {
  const config = { cache: { maxAge: 60, scopeKeySecret: 'a' }, redis: { url: 'redis://r' }, rules: [] };

  it('reads and formats a path as an operator writes it', () => {
    expect([valueAt(config, ['cache', 'scopeKeySecret']), valueAt(config, ['cache', 'nothing', 'deeper'])]).toEqual(['a', undefined]);
    expect(formatKeyPath(['keyFields', 'types', 'x.y', 0])).toBe('keyFields.types["x.y"][0]');
  });

  it('replaces a value in a copy that shares what is off the path, and leaves the original alone', () => {
    const replaced = withValueAt(config, ['cache', 'scopeKeySecret'], 'b');
    expect(replaced).toEqual({ cache: { maxAge: 60, scopeKeySecret: 'b' }, redis: { url: 'redis://r' }, rules: [] });
    expect(replaced.redis).toBe(config.redis);
    expect(Object.keys(replaced)).toEqual(['cache', 'redis', 'rules']);
    expect(config.cache.scopeKeySecret).toBe('a');
  });

  it('leaves out a key set to undefined, and creates a missing mapping on the way', () => {
    expect(withValueAt(config, ['redis'], undefined)).toEqual({ cache: config.cache, rules: [] });
    expect(withValueAt({ cache: {} } as Record<string, unknown>, ['logging', 'level'], 'debug')).toEqual({ cache: {}, logging: { level: 'debug' } });
  });
});
