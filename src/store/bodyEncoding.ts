import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzip, gzipSync, type BrotliOptions } from 'node:zlib';

/**
 * Stored bodies are compressed once, when a MISS stores them, so that a HIT answers a client that
 * accepts the encoding with the stored bytes as they are (README, Performance: gzip was chosen by
 * ratio and decompression cost). Bodies under `minBytes`, and bodies the encoding would not make
 * smaller, are stored as they are (`identity`).
 */

/** `identity`: the body as the origin sent it; `gzip` and `br` as in HTTP `content-encoding`. */
export type BodyEncoding = 'gzip' | 'br' | 'identity';

export interface CompressionSettings {
  encoding: BodyEncoding;
  /** zlib level (gzip 1-9) or brotli quality (0-11); undefined: gzip 6, brotli 4. */
  level?: number | undefined;
  /** Bodies shorter than this are stored identity: the saving would not pay for decompressing them. */
  minBytes: number;
}

/**
 * The body to store and its encoding. A body of up to ON_EVENT_LOOP_MAX_BYTES is compressed on the
 * event loop at a cheap setting: that takes less than handing it to zlib's thread pool and back
 * (docs/performance.md, What a MISS adds). Larger bodies, and brotli past quality 6, go to the
 * thread pool, so that they do not hold up HITs.
 */
export async function compressBody(body: Buffer, settings: CompressionSettings): Promise<{ body: Buffer; encoding: BodyEncoding }> {
  if (settings.encoding === 'identity' || body.length < settings.minBytes) return { body, encoding: 'identity' };
  const compressed = await compress(body, settings);
  return compressed.length < body.length ? { body: compressed, encoding: settings.encoding } : { body, encoding: 'identity' };
}

async function compress(body: Buffer, settings: CompressionSettings): Promise<Buffer> {
  const level = settings.level ?? (settings.encoding === 'gzip' ? DEFAULT_GZIP_LEVEL : DEFAULT_BROTLI_QUALITY);
  const onEventLoop = body.length <= ON_EVENT_LOOP_MAX_BYTES && (settings.encoding === 'gzip' || level <= ON_EVENT_LOOP_MAX_BROTLI_QUALITY);
  if (settings.encoding === 'gzip') return onEventLoop ? gzipSync(body, { level }) : gzipAsync(body, { level });
  const options: BrotliOptions = {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: level,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
    },
  };
  return onEventLoop ? brotliCompressSync(body, options) : brotliAsync(body, options);
}

/**
 * An entry's body as the origin sent it, for a client that does not accept the stored coding.
 * Decompressing on every such HIT cost a fifth of its CPU; an entry the replica-local cache holds
 * is the same object on every HIT, so its identity body is kept beside it for as long as the entry
 * itself lives (the local cache counts it in its bound, src/store/localCache.ts). Throws on a
 * corrupted body.
 */
export function identityBodyOf(entry: EncodedBody): Buffer {
  if (entry.encoding === 'identity') return entry.body;
  let body = identityBodies.get(entry);
  if (body === undefined) {
    body = decompressBody(entry.body, entry.encoding);
    identityBodies.set(entry, body);
  }
  return body;
}

const identityBodies = new WeakMap<EncodedBody, Buffer>();

/** A stored entry (CachedResponse), as far as its body goes. */
interface EncodedBody {
  readonly body: Buffer;
  readonly encoding: BodyEncoding;
}

/** The body as the origin sent it, for a client that does not accept `encoding`. Throws on a corrupted body. */
export function decompressBody(body: Buffer, encoding: BodyEncoding): Buffer {
  switch (encoding) {
    case 'identity':
      return body;
    case 'gzip':
      return gunzipSync(body);
    case 'br':
      return brotliDecompressSync(body);
  }
}

/**
 * A cheap check that `body` can be what svc-cache stored under `encoding` for an identity body of
 * `identityLength` bytes: gzip's magic bytes and its trailer's length (RFC 1952 section 2.3), a
 * brotli body no longer than the identity one. A truncated or foreign value reads as absent (a MISS).
 */
export function isPlausibleBody(body: Buffer, encoding: BodyEncoding, identityLength: number): boolean {
  switch (encoding) {
    case 'identity':
      return body.length === identityLength;
    case 'gzip':
      return body.length >= GZIP_FRAMING_BYTES && body[0] === 0x1f && body[1] === 0x8b && body.readUInt32LE(body.length - 4) === identityLength % 2 ** 32;
    case 'br':
      return body.length > 0 && body.length < identityLength;
  }
}

const DEFAULT_GZIP_LEVEL = 6;
/**
 * gzip at any level and brotli up to quality 6 take at most about 16 µs per KB (README, Compressed
 * storage), so at most about 130 µs for 8 KB; the thread pool's round trip alone measured about
 * 100 µs on a 2 KB body, against 20-30 µs to compress it in place.
 */
const ON_EVENT_LOOP_MAX_BYTES = 8 * 1024;
const ON_EVENT_LOOP_MAX_BROTLI_QUALITY = 6;
const DEFAULT_BROTLI_QUALITY = 4;
/** Header (10 bytes) and trailer (CRC-32 and length, 8 bytes) of a gzip member. */
const GZIP_FRAMING_BYTES = 18;

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);
