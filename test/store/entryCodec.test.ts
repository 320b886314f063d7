import { pbkdf2, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressBody, decompressBody, identityBodyOf, type CachedResponse, type CompressionSettings } from '../../src/store/index.js';
import { decodeEntry, encodeEntry } from '../../src/store/entryCodec.js';

const BODY = Buffer.from(JSON.stringify({ data: { todos: Array.from({ length: 40 }, (_, id) => ({ id: String(id), title: `todo ${id}`, done: id % 2 === 0 })) } }));
const GZIP: CompressionSettings = { encoding: 'gzip', minBytes: 256 };

async function storedEntry(body: Buffer, settings: CompressionSettings): Promise<CachedResponse> {
  return {
    ...(await compressBody(body, settings)),
    identityLength: body.length,
    contentType: 'application/json; charset=utf-8',
    headers: [['x-origin', 'one']],
    storedAt: 1_700_000_000_123,
    maxAge: 60,
    swr: 30,
    staleIfError: 600,
  };
}

describe('identityBodyOf', () => {
  it.each(['gzip', 'br'] as const)('decompresses a %s entry once: the same entry gets the same bytes back without decompressing again', async (encoding) => {
    const entry = await compressBody(BODY, { encoding, minBytes: 256 });
    const first = identityBodyOf(entry);
    expect(first.equals(BODY)).toBe(true);
    // A memo keyed on the entry object: corrupting the stored bytes now shows only on another entry.
    entry.body.fill(0);
    expect(identityBodyOf(entry)).toBe(first);
    expect(() => identityBodyOf({ ...entry })).toThrow();
  });

  it('an identity entry is its own body', () => {
    const entry = { body: BODY, encoding: 'identity' as const };
    expect(identityBodyOf(entry)).toBe(BODY);
  });
});

describe('compressBody and decompressBody', () => {
  it.each(['gzip', 'br'] as const)('compresses a body of at least minBytes with %s, and decompresses it to the same bytes', async (encoding) => {
    const stored = await compressBody(BODY, { encoding, minBytes: 256 });
    expect(stored.encoding).toBe(encoding);
    expect(stored.body.length).toBeLessThan(BODY.length / 3);
    expect(decompressBody(stored.body, encoding).equals(BODY)).toBe(true);
  });

  it('keeps a body under minBytes as it is, and compresses one of exactly minBytes', async () => {
    const small = BODY.subarray(0, 255);
    expect(await compressBody(small, GZIP)).toEqual({ body: small, encoding: 'identity' });
    expect((await compressBody(BODY.subarray(0, 256), GZIP)).encoding).toBe('gzip');
  });

  it('keeps a body the encoding would not make smaller as it is', async () => {
    const noise = randomBytes(4096);
    expect(await compressBody(noise, GZIP)).toEqual({ body: noise, encoding: 'identity' });
  });

  it('stores identity when compression is off', async () => {
    expect(await compressBody(BODY, { encoding: 'identity', minBytes: 0 })).toEqual({ body: BODY, encoding: 'identity' });
  });

  it('compresses a body of up to 8 KB on the event loop, and larger ones or brotli past quality 6 on zlib\'s thread pool', async () => {
    const repeated = Buffer.concat(Array.from({ length: Math.ceil(8193 / BODY.length) }, () => BODY));
    const small = repeated.subarray(0, 8192);
    const large = repeated.subarray(0, 8193);
    // Every thread of the pool busy: work handed to it finishes only after this.
    const poolWork = saturateThreadPool();
    const order: string[] = [];
    const compressions = [
      compressBody(small, GZIP).then(() => order.push('gzip 8 KB')),
      compressBody(small, { encoding: 'br', level: 6, minBytes: 0 }).then(() => order.push('br 6, 8 KB')),
      compressBody(large, GZIP).then(() => order.push('gzip over 8 KB')),
      compressBody(small, { encoding: 'br', level: 7, minBytes: 0 }).then(() => order.push('br 7')),
    ];
    await poolWork.then(() => order.push('a pool thread free'));
    await Promise.all(compressions);
    expect(order.slice(0, 3)).toEqual(['gzip 8 KB', 'br 6, 8 KB', 'a pool thread free']);
    expect(order.slice(3).sort()).toEqual(['br 7', 'gzip over 8 KB']);
  });

  it('throws on a corrupted compressed body rather than returning other bytes', () => {
    const gzipped = gzipSync(BODY);
    gzipped[20] = gzipped[20]! ^ 0xff;
    expect(() => decompressBody(gzipped, 'gzip')).toThrow();
  });
});

/**
 * As many key derivations as libuv's pool has threads (UV_THREADPOOL_SIZE, default 4), each long
 * enough to outlast an 8 KB compression by far; resolves when the first is done and a thread is free.
 */
function saturateThreadPool(): Promise<void> {
  const threads = Number(process.env['UV_THREADPOOL_SIZE'] ?? 4);
  const derive = (): Promise<void> => new Promise((resolve, reject) => pbkdf2('secret', 'salt', 300_000, 32, 'sha256', (error) => (error ? reject(error) : resolve())));
  return Promise.race(Array.from({ length: threads }, derive));
}

describe('entry codec', () => {
  it.each(['gzip', 'br', 'identity'] as const)('round-trips an entry stored %s', async (encoding) => {
    const entry = await storedEntry(BODY, { encoding, minBytes: 0 });
    expect(decodeEntry(encodeEntry(entry))).toEqual(entry);
  });

  it.each([1, 2])('reads a value of a previous format (version %i) as absent', async (version) => {
    const bytes = encodeEntry(await storedEntry(BODY, GZIP));
    bytes[0] = version;
    expect(decodeEntry(bytes)).toBeUndefined();
  });

  it('reads truncated values as absent, at every length', async () => {
    const bytes = encodeEntry(await storedEntry(BODY, GZIP));
    for (let length = 0; length < bytes.length; length += 1) {
      expect(decodeEntry(bytes.subarray(0, length)), `truncated to ${length} bytes`).toBeUndefined();
    }
  });

  it('reads a gzip body whose trailer does not match the stored length, or that is not gzip, as absent', async () => {
    const entry = await storedEntry(BODY, GZIP);
    expect(decodeEntry(encodeEntry({ ...entry, identityLength: BODY.length + 1 }))).toBeUndefined();
    expect(decodeEntry(encodeEntry({ ...entry, body: Buffer.from(BODY.subarray(0, entry.body.length)) }))).toBeUndefined();
  });

  it('reads an unknown encoding, an identity body of the wrong length and random bytes as absent', async () => {
    const bytes = encodeEntry(await storedEntry(BODY, GZIP));
    bytes[33] = 7;
    expect(decodeEntry(bytes)).toBeUndefined();
    expect(decodeEntry(encodeEntry({ ...(await storedEntry(BODY, { encoding: 'identity', minBytes: 0 })), identityLength: 3 }))).toBeUndefined();
    for (let attempt = 0; attempt < 200; attempt += 1) {
      const noise = randomBytes(64 + attempt);
      noise[0] = 3;
      expect(() => decodeEntry(noise)).not.toThrow();
    }
  });
});
