import type { HeaderMap as HeaderMapMessage, HeaderValue } from '../extproc/index.js';
import type { EnvoyProfile } from './filterConfig.js';

export type HeaderEntry = readonly [name: string, value: string];

/**
 * A header map as Envoy keeps it: names lower-cased, pseudo-headers ahead of the others (docs/ext-proc.md,
 * Message order), values held as byte strings (one char per byte, latin1) because raw_value carries bytes.
 */
export class HeaderMap {
  private readonly list: [string, string][] = [];

  constructor(entries: Iterable<HeaderEntry> = []) {
    for (const [name, value] of entries) this.add(name, value);
  }

  get size(): number {
    return this.list.length;
  }

  get(name: string): string | undefined {
    const key = name.toLowerCase();
    return this.list.find(([entryName]) => entryName === key)?.[1];
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** Adds another value; a pseudo-header goes after the last pseudo-header. */
  add(name: string, value: string): void {
    const key = name.toLowerCase();
    if (key.startsWith(':')) {
      const firstRegular = this.list.findIndex(([entryName]) => !entryName.startsWith(':'));
      this.list.splice(firstRegular === -1 ? this.list.length : firstRegular, 0, [key, value]);
    } else {
      this.list.push([key, value]);
    }
  }

  /** Replaces every value with one, keeping the header where it first was. */
  set(name: string, value: string): void {
    const key = name.toLowerCase();
    const first = this.list.findIndex(([entryName]) => entryName === key);
    if (first === -1) {
      this.add(key, value);
      return;
    }
    this.list[first] = [key, value];
    this.removeFrom(key, first + 1);
  }

  remove(name: string): void {
    this.removeFrom(name.toLowerCase(), 0);
  }

  entries(): readonly HeaderEntry[] {
    return this.list;
  }

  /** What Envoy counts against max_request_headers_kb: the bytes of every name and value. */
  byteSize(): number {
    return this.list.reduce((total, [name, value]) => total + name.length + value.length, 0);
  }

  private removeFrom(key: string, start: number): void {
    for (let index = this.list.length - 1; index >= start; index--) {
      if (this.list[index]?.[0] === key) this.list.splice(index, 1);
    }
  }
}

/** The HeaderMap message Envoy sends: raw_value only since 1.27, a UTF-8 `value` before (docs/ext-proc.md, Header values). */
export function headerMapToMessage(headers: HeaderMap, profile: EnvoyProfile): HeaderMapMessage {
  return {
    headers: headers.entries().map(([key, value]): HeaderValue => {
      const bytes = Buffer.from(value, 'latin1');
      return profile.rawValueMode === 'raw' ? { key, raw_value: bytes } : { key, value: bytes.toString('utf8') };
    }),
  };
}

/** The value Envoy reads from a mutation: only the field its version uses; the other one is ignored (docs/ext-proc.md, Header values). */
export function headerValueFromMessage(header: HeaderValue, profile: EnvoyProfile): string {
  if (profile.rawValueMode === 'raw') return (header.raw_value ?? Buffer.alloc(0)).toString('latin1');
  return Buffer.from(header.value ?? '', 'utf8').toString('latin1');
}
