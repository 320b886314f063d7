/**
 * A protobuf wire-format codec written from the encoding spec alone, so tests can talk ext_proc with
 * field numbers taken from Envoy's published API, independently of this repo's proto/ files.
 */

export type WireValue = bigint | Buffer;

export type Field = [number, WireValue | Buffer | Field[] | string | number | boolean];

/** Encodes fields in order: nested arrays become length-delimited messages, strings UTF-8. */
export function encodeMessage(fields: readonly Field[]): Buffer {
  const chunks: Buffer[] = [];
  for (const [number, value] of fields) {
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
      chunks.push(varint(BigInt(number) << 3n), varint(BigInt(typeof value === 'boolean' ? Number(value) : value)));
      continue;
    }
    const bytes = Array.isArray(value) ? encodeMessage(value) : typeof value === 'string' ? Buffer.from(value) : value;
    chunks.push(varint((BigInt(number) << 3n) | 2n), varint(BigInt(bytes.length)), bytes);
  }
  return Buffer.concat(chunks);
}

/** Decodes one message level: every occurrence of every field, varints as bigint, the rest as bytes. */
export function decodeMessage(buffer: Buffer): Map<number, WireValue[]> {
  const fields = new Map<number, WireValue[]>();
  let offset = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[offset++];
      if (byte === undefined) throw new Error('truncated varint');
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (offset < buffer.length) {
    const tag = readVarint();
    const number = Number(tag >> 3n);
    const wireType = Number(tag & 7n);
    let value: WireValue;
    if (wireType === 0) value = readVarint();
    else if (wireType === 2) {
      const length = Number(readVarint());
      value = buffer.subarray(offset, offset + length);
      offset += length;
    } else if (wireType === 1) {
      value = buffer.subarray(offset, offset + 8);
      offset += 8;
    } else if (wireType === 5) {
      value = buffer.subarray(offset, offset + 4);
      offset += 4;
    } else throw new Error(`unsupported wire type ${wireType}`);
    fields.set(number, [...(fields.get(number) ?? []), value]);
  }
  return fields;
}

/** The single bytes-valued occurrence of a field (or undefined). */
export function bytesField(message: Map<number, WireValue[]>, number: number): Buffer | undefined {
  const value = message.get(number)?.[0];
  return Buffer.isBuffer(value) ? value : undefined;
}

export function varintField(message: Map<number, WireValue[]>, number: number): bigint | undefined {
  const value = message.get(number)?.[0];
  return typeof value === 'bigint' ? value : undefined;
}

function varint(value: bigint): Buffer {
  const bytes: number[] = [];
  let rest = value;
  do {
    let byte = Number(rest & 0x7fn);
    rest >>= 7n;
    if (rest > 0n) byte |= 0x80;
    bytes.push(byte);
  } while (rest > 0n);
  return Buffer.from(bytes);
}
