/**
 * Removes object members from JSON text by cutting their bytes out, so everything else reaches the
 * reader exactly as written: number spellings (`1.0`, `1e3`, integers beyond 2^53), string escapes,
 * whitespace, key order and duplicate keys. Parsing and re-serialising would normalise all of
 * those, which a client comparing against the origin, or reading 64-bit integers, would notice.
 */

/** Which members of one JSON object go, and how to treat the values of those that stay. */
export interface MemberPlan {
  removes(key: string): boolean;
  /** The plan for the value under `key` (for each element when it is an array), or undefined to leave it whole. */
  within(key: string): MemberPlan | undefined;
}

/**
 * The JSON text with the members `plan` removes taken out of the top-level object and, following
 * `within`, out of the objects below it. Returns `json` itself when nothing was removed, or when it
 * is not a JSON object (there is then nothing this could safely cut).
 */
export function removeMembers(json: Buffer, plan: MemberPlan): Buffer {
  const cutter = new MemberCutter(json);
  try {
    const start = cutter.skipWhitespace(0);
    if (json[start] !== OPEN_BRACE) return json;
    cutter.object(start, plan);
  } catch (error) {
    if (error instanceof MalformedJson) return json;
    throw error;
  }
  return cutter.result();
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

class MalformedJson extends Error {}

class MemberCutter {
  /** Byte ranges to leave out, in increasing order and never overlapping. */
  private readonly cuts: Array<[start: number, end: number]> = [];

  constructor(private readonly json: Buffer) {}

  result(): Buffer {
    if (this.cuts.length === 0) return this.json;
    const kept: Buffer[] = [];
    let from = 0;
    for (const [start, end] of this.cuts) {
      kept.push(this.json.subarray(from, start));
      from = end;
    }
    kept.push(this.json.subarray(from));
    return Buffer.concat(kept);
  }

  /**
   * Reads the object starting at `start` and returns the index after it. A removed member takes
   * the comma before it along, or, ahead of the first member kept, the comma after it, so the
   * object stays valid JSON with its remaining whitespace untouched.
   */
  object(start: number, plan: MemberPlan): number {
    let index = this.skipWhitespace(start + 1);
    if (this.json[index] === CLOSE_BRACE) return index + 1;
    let keptAny = false;
    let leadingCutStart: number | undefined;
    let previousValueEnd = index;
    for (;;) {
      if (this.json[index] !== QUOTE) throw new MalformedJson();
      const keyStart = index;
      const keyEnd = this.stringEnd(keyStart);
      const key = this.decodeString(keyStart, keyEnd);
      index = this.skipWhitespace(keyEnd);
      if (this.json[index] !== COLON) throw new MalformedJson();
      const valueStart = this.skipWhitespace(index + 1);
      let valueEnd: number;
      if (plan.removes(key)) {
        valueEnd = this.valueEnd(valueStart);
        if (keptAny) this.cuts.push([previousValueEnd, valueEnd]);
        else leadingCutStart ??= keyStart;
      } else {
        if (!keptAny && leadingCutStart !== undefined) this.cuts.push([leadingCutStart, keyStart]);
        keptAny = true;
        const inner = plan.within(key);
        valueEnd = inner ? this.value(valueStart, inner) : this.valueEnd(valueStart);
      }
      previousValueEnd = valueEnd;
      index = this.skipWhitespace(valueEnd);
      if (this.json[index] === COMMA) {
        index = this.skipWhitespace(index + 1);
      } else if (this.json[index] === CLOSE_BRACE) {
        if (!keptAny && leadingCutStart !== undefined) this.cuts.push([leadingCutStart, previousValueEnd]);
        return index + 1;
      } else {
        throw new MalformedJson();
      }
    }
  }

  skipWhitespace(index: number): number {
    let at = index;
    for (;;) {
      const byte = this.json[at];
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return at;
      at++;
    }
  }

  private value(start: number, plan: MemberPlan): number {
    const first = this.json[start];
    if (first === OPEN_BRACE) return this.object(start, plan);
    if (first === OPEN_BRACKET) return this.array(start, plan);
    return this.valueEnd(start);
  }

  private array(start: number, plan: MemberPlan): number {
    let index = this.skipWhitespace(start + 1);
    if (this.json[index] === CLOSE_BRACKET) return index + 1;
    for (;;) {
      index = this.skipWhitespace(this.value(index, plan));
      if (this.json[index] === COMMA) {
        index = this.skipWhitespace(index + 1);
      } else if (this.json[index] === CLOSE_BRACKET) {
        return index + 1;
      } else {
        throw new MalformedJson();
      }
    }
  }

  /** The index after the value starting at `start`, read only as far as needed to find its end. */
  private valueEnd(start: number): number {
    const first = this.json[start];
    if (first === QUOTE) return this.stringEnd(start);
    if (first === OPEN_BRACE || first === OPEN_BRACKET) return this.nestedEnd(start);
    let index = start;
    for (;;) {
      const byte = this.json[index];
      if (byte === undefined || byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET) break;
      if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) break;
      index++;
    }
    if (index === start) throw new MalformedJson();
    return index;
  }

  private nestedEnd(start: number): number {
    let depth = 0;
    let index = start;
    for (;;) {
      const byte = this.json[index];
      if (byte === undefined) throw new MalformedJson();
      if (byte === QUOTE) {
        index = this.stringEnd(index);
        continue;
      }
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++;
      else if ((byte === CLOSE_BRACE || byte === CLOSE_BRACKET) && --depth === 0) return index + 1;
      index++;
    }
  }

  /** The index after the closing quote of the string whose opening quote is at `start`. */
  private stringEnd(start: number): number {
    let from = start + 1;
    for (;;) {
      const quote = this.json.indexOf(QUOTE, from);
      if (quote < 0) throw new MalformedJson();
      let backslashes = 0;
      while (this.json[quote - 1 - backslashes] === BACKSLASH) backslashes++;
      if (backslashes % 2 === 0) return quote + 1;
      from = quote + 1;
    }
  }

  private decodeString(start: number, end: number): string {
    const text = this.json.toString('utf8', start + 1, end - 1);
    if (!text.includes('\\')) return text;
    try {
      return JSON.parse(this.json.toString('utf8', start, end)) as string;
    } catch {
      throw new MalformedJson();
    }
  }
}
