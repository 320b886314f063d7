import { isPlausibleBody, type BodyEncoding } from './bodyEncoding.js';
import type { CachedResponse } from './types.js';

/**
 * The byte layout of a cached response in Redis: a small binary header followed by the body exactly
 * as stored (compressed or not), so a HIT never parses or copies the body through JSON.
 *
 *   u8 format version | f64 storedAt | f64 maxAge | f64 swr | f64 staleIfError
 *   u8 body encoding (0 identity, 1 gzip, 2 br) | u32 identity body length
 *   u16 content-type length | content-type (UTF-8)
 *   u16 header count | per header: u16 name length | name | u32 value length | value
 *   body (the rest)
 *
 * Numbers are big-endian. A value written by another format version (version 1 had no encoding and
 * length, version 2 no staleIfError), or one that is truncated or malformed, reads as absent: a
 * rolling upgrade that changes the layout, or a damaged value, costs misses, not errors.
 */

export const FORMAT_VERSION = 3;
const FIXED_HEADER_BYTES = 1 + 8 + 8 + 8 + 8;
const ENCODINGS: readonly BodyEncoding[] = ['identity', 'gzip', 'br'];

export function encodeEntry(response: CachedResponse): Buffer {
  const contentType = Buffer.from(response.contentType, 'utf8');
  const headers = response.headers.map(([name, value]) => [Buffer.from(name, 'utf8'), Buffer.from(value, 'utf8')] as const);
  const headerBytes = headers.reduce((sum, [name, value]) => sum + 2 + name.length + 4 + value.length, 0);
  const prefix = Buffer.allocUnsafe(FIXED_HEADER_BYTES + 1 + 4 + 2 + contentType.length + 2 + headerBytes);

  let offset = prefix.writeUInt8(FORMAT_VERSION, 0);
  offset = prefix.writeDoubleBE(response.storedAt, offset);
  offset = prefix.writeDoubleBE(response.maxAge, offset);
  offset = prefix.writeDoubleBE(response.swr, offset);
  offset = prefix.writeDoubleBE(response.staleIfError, offset);
  offset = prefix.writeUInt8(ENCODINGS.indexOf(response.encoding), offset);
  offset = prefix.writeUInt32BE(response.identityLength, offset);
  offset = prefix.writeUInt16BE(contentType.length, offset);
  offset += contentType.copy(prefix, offset);
  offset = prefix.writeUInt16BE(headers.length, offset);
  for (const [name, value] of headers) {
    offset = prefix.writeUInt16BE(name.length, offset);
    offset += name.copy(prefix, offset);
    offset = prefix.writeUInt32BE(value.length, offset);
    offset += value.copy(prefix, offset);
  }
  return Buffer.concat([prefix, response.body], prefix.length + response.body.length);
}

/** The response stored in `bytes`, or undefined when they were written in another format version or are damaged. */
export function decodeEntry(bytes: Buffer): CachedResponse | undefined {
  if (bytes.length < FIXED_HEADER_BYTES || bytes.readUInt8(0) !== FORMAT_VERSION) return undefined;
  try {
    return readEntry(new ByteReader(bytes, 1));
  } catch {
    return undefined;
  }
}

function readEntry(reader: ByteReader): CachedResponse | undefined {
  const storedAt = reader.double();
  const maxAge = reader.double();
  const swr = reader.double();
  const staleIfError = reader.double();
  const encoding = ENCODINGS[reader.uint8()];
  const identityLength = reader.uint32();
  const contentType = reader.text(reader.uint16());
  const headerCount = reader.uint16();
  const headers: Array<[string, string]> = [];
  for (let index = 0; index < headerCount; index += 1) {
    const name = reader.text(reader.uint16());
    headers.push([name, reader.text(reader.uint32())]);
  }
  const body = reader.rest();
  if (encoding === undefined || !isPlausibleBody(body, encoding, identityLength)) return undefined;
  return { body, encoding, identityLength, contentType, headers, storedAt, maxAge, swr, staleIfError };
}

class ByteReader {
  constructor(
    private readonly bytes: Buffer,
    private offset: number,
  ) {}

  double(): number {
    const value = this.bytes.readDoubleBE(this.offset);
    this.offset += 8;
    return value;
  }

  uint8(): number {
    const value = this.bytes.readUInt8(this.offset);
    this.offset += 1;
    return value;
  }

  uint16(): number {
    const value = this.bytes.readUInt16BE(this.offset);
    this.offset += 2;
    return value;
  }

  uint32(): number {
    const value = this.bytes.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  text(length: number): string {
    const end = this.offset + length;
    if (end > this.bytes.length) throw new RangeError('cache entry is truncated');
    const value = this.bytes.toString('utf8', this.offset, end);
    this.offset = end;
    return value;
  }

  rest(): Buffer {
    return this.bytes.subarray(this.offset);
  }
}
