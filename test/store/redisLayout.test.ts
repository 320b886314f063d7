import { describe, expect, it } from 'vitest';
import { RedisKeyLayout } from '../../src/store/redisLayout.js';

describe('Redis key layout', () => {
  const layout = new RedisKeyLayout('svc:');

  it('locates a cache key and names a long tag as earlier versions did, so stored entries stay reachable', () => {
    // Computed with the Hash-object digests these replaced.
    const location = layout.locate('PUBLIC/abc');
    expect({ shard: location.shard, entryId: location.entryId, keyCheck: location.keyCheck.toString('hex') }).toEqual({
      shard: 3,
      entryId: '-7804037049848598577',
      keyCheck: 'bddb7d3524b54387',
    });
    expect(layout.entryKey(location)).toBe('svc:{p3.0}:e:-7804037049848598577');
    expect(layout.tagIndexKey(3, 'T:'.padEnd(300, 'x'))).toBe('svc:{p3.0}:ti:#gy4_sfHqfBjvWE_ynKuKHw');
  });
});
