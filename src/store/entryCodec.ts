import type { CachedResponse } from './types.js';

/**
 * The byte layout of a cached response in Redis: a small binary header followed by the body exactly
 * as the client receives it, so a HIT never parses or copies the body through JSON.
 *
 *   u8 format version | f64 storedAt | f64 maxAge | f64 swr
 *   u16 content-type length | content-type (UTF-8)
 *   u16 header count | per header: u16 name length | name | u32 value length | value
 *   body (the rest)
 *
 * Numbers are big-endian. A value written by another format version reads as absent, so a rolling
 * upgrade that changes the layout costs misses, not errors.
 */

export const FORMAT_VERSION = 1;
const FIXED_HEADER_BYTES = 1 + 8 + 8 + 8;

export function encodeEntry(response: CachedResponse): Buffer {
  const contentType = Buffer.from(response.contentType, 'utf8');
  const headers = response.headers.map(([name, value]) => [Buffer.from(name, 'utf8'), Buffer.from(value, 'utf8')] as const);
  const headerBytes = headers.reduce((sum, [name, value]) => sum + 2 + name.length + 4 + value.length, 0);
  const prefix = Buffer.allocUnsafe(FIXED_HEADER_BYTES + 2 + contentType.length + 2 + headerBytes);

  let offset = prefix.writeUInt8(FORMAT_VERSION, 0);
  offset = prefix.writeDoubleBE(response.storedAt, offset);
  offset = prefix.writeDoubleBE(response.maxAge, offset);
  offset = prefix.writeDoubleBE(response.swr, offset);
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

/** The response stored in `bytes`, or undefined when they were written in another format version. */
export function decodeEntry(bytes: Buffer): CachedResponse | undefined {
  if (bytes.length < FIXED_HEADER_BYTES || bytes.readUInt8(0) !== FORMAT_VERSION) return undefined;
  const reader = new ByteReader(bytes, 1);
  const storedAt = reader.double();
  const maxAge = reader.double();
  const swr = reader.double();
  const contentType = reader.text(reader.uint16());
  const headerCount = reader.uint16();
  const headers: Array<[string, string]> = [];
  for (let index = 0; index < headerCount; index += 1) {
    const name = reader.text(reader.uint16());
    headers.push([name, reader.text(reader.uint32())]);
  }
  return { body: reader.rest(), contentType, headers, storedAt, maxAge, swr };
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
