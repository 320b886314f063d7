import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { hitResponse, replayableHeaders } from '../../src/engine/responses.js';
import type { CachedResponse } from '../../src/store/index.js';

const IDENTITY = Buffer.from(`{"data":{"todos":[${'{"id":"1","title":"Buy milk"},'.repeat(20)}{"id":"2"}]}}`);
const GZIPPED = gzipSync(IDENTITY);
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);

const entry: CachedResponse = {
  body: GZIPPED,
  encoding: 'gzip',
  identityLength: IDENTITY.length,
  contentType: 'application/json',
  headers: [
    ['etag', '"v1"'],
    ['content-digest', 'sha-256=:abc=:'],
    ['repr-digest', 'sha-256=:abc=:'],
    ['digest', 'SHA-256=abc='],
    ['content-md5', 'abc=='],
    ['x-app', 'kept'],
  ],
  storedAt: NOW - 5_000,
  maxAge: 60,
  swr: 0,
  staleIfError: 0,
};

describe('hitResponse', () => {
  it("sends the stored compressed bytes without the origin's digests of its own bytes, its strong ETag weakened", () => {
    const { headers, body } = hitResponse(entry, NOW, [], { body: GZIPPED, encoding: 'gzip' });
    expect(body).toBe(GZIPPED);
    expect(headers).toEqual([
      ['content-type', 'application/json'],
      ['etag', 'W/"v1"'],
      ['x-app', 'kept'],
      ['content-encoding', 'gzip'],
      ['vary', 'accept-encoding'],
      ['svc-cache', 'HIT'],
      ['age', '5'],
    ]);
  });

  it("sends the origin's bytes decompressed with the origin's digests and ETag as they came", () => {
    const { headers, body } = hitResponse(entry, NOW, [], { body: IDENTITY, encoding: 'identity' });
    expect(body).toBe(IDENTITY);
    expect(headers).toEqual([['content-type', 'application/json'], ...entry.headers, ['vary', 'accept-encoding'], ['svc-cache', 'HIT'], ['age', '5']]);
  });

  it('leaves a weak ETag as it is', () => {
    const weak = { ...entry, headers: [['etag', 'W/"v1"']] as Array<[string, string]> };
    expect(hitResponse(weak, NOW, [], { body: GZIPPED, encoding: 'gzip' }).headers).toContainEqual(['etag', 'W/"v1"']);
  });
});

describe('replayableHeaders', () => {
  // The ext_proc audit: Envoy drops a `host` mutation and counts it in rejected_header_mutations,
  // the counter operators are told to watch, on every HIT of such an origin's answer.
  it("keeps an origin's own headers but a host, which Envoy's mutation rules refuse", () => {
    expect(replayableHeaders([['host', 'origin.internal'], ['x-kept', 'yes'], ['cache-control', 'max-age=60']])).toEqual([
      ['x-kept', 'yes'],
      ['cache-control', 'max-age=60'],
    ]);
  });
});
