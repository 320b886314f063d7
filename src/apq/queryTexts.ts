import { LRUCache } from 'lru-cache';

/**
 * Query texts by hash in process memory, each until its own expiry, bounded in bytes (hash and
 * text, UTF-16 code units counted as one, and REGISTRATION_OVERHEAD_BYTES each) with the least
 * recently used going first. The bound is `apq.maxBytes`, which a reload may change (README, Hot
 * reload): `limitTo` moves the texts to a cache of the new bound, oldest first, so a smaller one
 * drops the oldest down to it.
 */
export class QueryTexts {
  private texts: LRUCache<string, string>;

  constructor(maxBytes: number) {
    this.texts = boundedTexts(maxBytes);
  }

  /** The text, now the most recently used. */
  get(hash: string): string | undefined {
    return this.texts.get(hash);
  }

  /** The text, its place in the order left alone. */
  peek(hash: string): string | undefined {
    return this.texts.peek(hash);
  }

  /** Kept as the most recently used; a text larger than the whole bound is not kept. */
  set(hash: string, query: string, ttlMs: number): void {
    this.texts.set(hash, query, { ttl: ttlMs });
  }

  /** Makes `maxBytes` the bound: the texts move over oldest first, each keeping its expiry. */
  limitTo(maxBytes: number): void {
    if (maxBytes === this.texts.maxSize) return;
    const limited = boundedTexts(maxBytes);
    for (const hash of this.texts.rkeys()) {
      const query = this.texts.peek(hash);
      const remaining = this.texts.getRemainingTTL(hash);
      // A ttl of 0 is "never expires" to lru-cache: a text at its expiry is not carried over.
      if (query !== undefined && remaining > 0) limited.set(hash, query, { ttl: remaining });
    }
    this.texts = limited;
  }
}

function boundedTexts(maxBytes: number): LRUCache<string, string> {
  return new LRUCache<string, string>({ maxSize: maxBytes, sizeCalculation: (query, hash) => REGISTRATION_OVERHEAD_BYTES + hash.length + heapBytesOf(query) });
}

/**
 * The bytes V8 keeps a string in: one a character while every character fits in a byte, two
 * otherwise. Counting characters alone, a query with one character past U+00FF took twice its share
 * of the bound. Linear in the text, once per registration.
 */
function heapBytesOf(text: string): number {
  return /[\u0100-\uffff]/.test(text) ? 2 * text.length : text.length;
}

/**
 * What a registration costs beyond its hash and text, counted against `apq.maxBytes` by every
 * registry alike so that the bound means the same in each: in Redis a key, a sorted-set member and
 * a hash field, about 400 bytes (counting the characters alone, the registry took 6.8 times the
 * bound of the smallest queries); in a process about 170 (two strings, the cache's slots and expiry).
 */
export const REGISTRATION_OVERHEAD_BYTES = 416;
