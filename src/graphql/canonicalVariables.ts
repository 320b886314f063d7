/**
 * JSON read without lossy parsing, for keys that tell apart what the origin tells apart (issue 12
 * item 10): numbers keep their literal text (`1` and `1.0` differ, `9007199254740993` stays),
 * strings get one escape form (`"\u0061"` is `"a"`), insignificant whitespace goes, and an object's
 * members keep the order they were sent in (a custom scalar's value reaches the origin's code as
 * sent: `{"b":2,"a":1}` may sort otherwise than `{"a":1,"b":2}`: canonicalInOrder), or are sorted
 * by key where no origin sees their order (canonical: input objects). One pass over the text with
 * an explicit stack: linear in its size (but for sorting each object's keys), and no nesting depth
 * can exhaust the call stack.
 */

export type JsonReadError =
  /** Not JSON (RFC 8259), or a byte-order mark before it. */
  | 'invalid-json'
  /** An object names one key twice with different values: origins differ on which one wins. */
  | 'ambiguous';

export type JsonBytesReadError = JsonReadError | 'invalid-utf8';

export interface JsonValue {
  readonly kind: 'object' | 'array' | 'string' | 'number' | 'true' | 'false' | 'null';
  /** The value's text exactly as sent. */
  readonly raw: string;
  /** The decoded value of a string. */
  readonly string?: string;
  /** An object's members by decoded key (a key repeated with an identical value is one member). */
  readonly members?: ReadonlyMap<string, JsonValue>;
  readonly elements?: readonly JsonValue[];
  /** The canonical text, each object's members sorted by key: for values whose member order no origin sees. */
  canonical(): string;
  /** The canonical text with each object's members in the order sent (a key given twice: once, where first given). */
  canonicalInOrder(): string;
}

/** The canonical text of JSON text, or why there is none. */
export function canonicalJsonText(text: string): { ok: true; text: string } | { ok: false; error: JsonReadError } {
  const value = readJson(text);
  return typeof value === 'string' ? { ok: false, error: value } : { ok: true, text: value.canonical() };
}

/**
 * JSON from raw bytes (a POST body). Bytes that are not UTF-8 are refused rather than replaced with
 * U+FFFD, which would make different bodies one key; a byte-order mark is kept, so it is invalid JSON.
 */
export function readJsonBytes(bytes: Uint8Array): JsonValue | JsonBytesReadError {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return 'invalid-utf8';
  }
  return readJson(text);
}

/**
 * Reads one JSON text (RFC 8259) whole, into a tape: one record per value and member key, in text
 * order, in typed arrays, so that reading costs no object per value. Values are decoded, members
 * sorted and canonical text built only when asked for, and only for the values asked about. Each
 * character is looked at a bounded number of times: a 1 MB body of nested arrays or of empty
 * objects is read in tens of milliseconds, where a tree of objects per value took over a second,
 * most of it in the garbage collector.
 */
export function readJson(text: string): JsonValue | JsonReadError {
  const tape = new Tape(text);
  const open: number[] = [];
  // Insignificant whitespace inside a container makes its canonical text differ from its text.
  const skip = (from: number): number => {
    const to = skipWhitespace(text, from);
    if (to !== from && open.length > 0) tape.verbatim[open[open.length - 1]!] = 0;
    return to;
  };
  // A member, element or key whose canonical text is not its text makes its container's differ too.
  const placed = (record: number): void => {
    if (open.length === 0) return;
    const container = open[open.length - 1]!;
    if (tape.verbatim[record] === 0) tape.verbatim[container] = 0;
    if (tape.ordered[record] === 0) tape.ordered[container] = 0;
  };
  let index = skip(0);
  // After a value: expect `,` or the closing bracket of the open container, or the end of the text.
  let afterValue = false;
  for (;;) {
    if (afterValue) {
      const container = open[open.length - 1];
      if (container === undefined) break;
      const isObject = tape.kinds[container] === OBJECT;
      const code = text.charCodeAt(index);
      if (code === COMMA) {
        index = skip(index + 1);
        if (isObject) index = readKey(tape, index, container);
        if (index < 0) return 'invalid-json';
        if (isObject) placed(tape.count - 1);
        afterValue = false;
        continue;
      }
      if (code !== (isObject ? CLOSE_BRACE : CLOSE_BRACKET)) return 'invalid-json';
      open.pop();
      tape.close(container, index + 1);
      const members = isObject ? memberOrder(tape, container) : 'ascending';
      if (members === 'ambiguous') return members;
      if (members !== 'ascending') tape.ordered[container] = 0;
      if (members === 'repeated') tape.verbatim[container] = 0;
      placed(container);
      index = skip(index + 1);
      continue;
    }
    const code = text.charCodeAt(index);
    if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      const isObject = code === OPEN_BRACE;
      const container = tape.open(isObject ? OBJECT : ARRAY, index);
      open.push(container);
      index = skip(index + 1);
      if (text.charCodeAt(index) === (isObject ? CLOSE_BRACE : CLOSE_BRACKET)) afterValue = true;
      else if (isObject) index = readKey(tape, index, container);
      if (index < 0) return 'invalid-json';
      if (isObject && !afterValue) placed(tape.count - 1);
      continue;
    }
    const end = readScalar(tape, index);
    if (end < 0) return 'invalid-json';
    placed(tape.count - 1);
    index = skip(end);
    afterValue = true;
  }
  if (index !== text.length) return 'invalid-json';
  return new ReadValue(tape, 0);
}

const INITIAL_RECORDS = 64;

const OBJECT = 0;
const ARRAY = 1;
/** A string without escapes: its value is the text between its quotes. */
const PLAIN_STRING = 2;
const ESCAPED_STRING = 3;
const NUMBER = 4;
const TRUE = 5;
const FALSE = 6;
const NULL = 7;
/** A member's key (a string), followed on the tape by the member's value. */
const PLAIN_KEY = 8;
const ESCAPED_KEY = 9;

const KIND_NAMES: Readonly<Record<number, JsonValue['kind']>> = {
  [OBJECT]: 'object',
  [ARRAY]: 'array',
  [PLAIN_STRING]: 'string',
  [ESCAPED_STRING]: 'string',
  [NUMBER]: 'number',
  [TRUE]: 'true',
  [FALSE]: 'false',
  [NULL]: 'null',
};

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LITERALS = [
  ['true', TRUE],
  ['false', FALSE],
  ['null', NULL],
] as const;

/**
 * Records in text order: a container's members or elements follow it, and `after` is the record
 * after its last one, so its children are walked by jumping from one child's `after` to the next.
 * Every record starts at its own character of the text, so the text's length bounds their number.
 */
class Tape {
  kinds: Uint8Array;
  starts: Int32Array;
  ends: Int32Array;
  after: Int32Array;
  /** 1 when the record's canonical text is its text as sent: no whitespace, escape or repeated key in it. */
  verbatim: Uint8Array;
  /** 1 when every object within the record has its keys in ascending order: its sorted text is its text in the order sent. */
  ordered: Uint8Array;
  count = 0;

  constructor(readonly text: string) {
    // Grown by doubling up to one record per character: a body of few values (one long query
    // string) costs a small tape, and only text dense with values costs 15 bytes a character.
    const capacity = Math.min(text.length + 1, INITIAL_RECORDS);
    this.kinds = new Uint8Array(capacity);
    this.starts = new Int32Array(capacity);
    this.ends = new Int32Array(capacity);
    this.after = new Int32Array(capacity);
    this.verbatim = new Uint8Array(capacity);
    this.ordered = new Uint8Array(capacity);
  }

  /** A value or key whose text is known whole. */
  add(kind: number, start: number, end: number, verbatim = true): number {
    const record = this.open(kind, start);
    this.close(record, end);
    if (!verbatim) this.verbatim[record] = 0;
    return record;
  }

  open(kind: number, start: number): number {
    if (this.count === this.kinds.length) this.grow();
    const record = this.count++;
    this.kinds[record] = kind;
    this.starts[record] = start;
    this.verbatim[record] = 1;
    this.ordered[record] = 1;
    return record;
  }

  close(record: number, end: number): void {
    this.ends[record] = end;
    this.after[record] = this.count;
  }

  private grow(): void {
    const capacity = Math.min(2 * this.kinds.length, this.text.length + 1);
    const grown = <T extends Uint8Array | Int32Array>(array: T, into: T): T => {
      into.set(array);
      return into;
    };
    this.kinds = grown(this.kinds, new Uint8Array(capacity));
    this.starts = grown(this.starts, new Int32Array(capacity));
    this.ends = grown(this.ends, new Int32Array(capacity));
    this.after = grown(this.after, new Int32Array(capacity));
    this.verbatim = grown(this.verbatim, new Uint8Array(capacity));
    this.ordered = grown(this.ordered, new Uint8Array(capacity));
  }

  /** The records of an object's members (key, value) or an array's elements, in text order. */
  children(container: number): number[] {
    const children: number[] = [];
    for (let child = container + 1; child < this.after[container]!; child = this.after[child]!) children.push(child);
    return children;
  }

  /** The decoded value of a string or key record. */
  stringOf(record: number): string {
    const start = this.starts[record]!;
    const end = this.ends[record]!;
    const kind = this.kinds[record];
    return kind === PLAIN_STRING || kind === PLAIN_KEY ? this.text.slice(start + 1, end - 1) : decodeEscapedString(this.text, start, end);
  }

  /**
   * An object's members by decoded key, in the order sent or sorted by key; of a key given twice
   * (with one value, as reading checked), the first.
   */
  membersOf(object: number, sorted: boolean): Member[] {
    const children = this.children(object);
    const members: Member[] = [];
    for (let index = 0; index < children.length; index += 2) {
      members.push({ key: this.stringOf(children[index]!), keyRecord: children[index]!, value: children[index + 1]! });
    }
    if (!sorted) {
      const seen = new Set<string>();
      return members.filter((member) => !seen.has(member.key) && seen.add(member.key));
    }
    // Sorted by decoded key (UTF-16 code units, as JavaScript compares), so spellings of a key agree; stable.
    members.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return members.filter((member, index) => index === 0 || member.key !== members[index - 1]!.key);
  }
}

interface Member {
  key: string;
  keyRecord: number;
  value: number;
}

/** A member key of `object` and the colon after it, at `start`; where its value starts, or -1 when there is none. */
function readKey(tape: Tape, start: number, object: number): number {
  const { text } = tape;
  if (text.charCodeAt(start) !== QUOTE) return -1;
  const end = readString(tape, start, PLAIN_KEY, ESCAPED_KEY);
  if (end < 0) return -1;
  const colon = skipWhitespace(text, end);
  if (text.charCodeAt(colon) !== COLON) return -1;
  const value = skipWhitespace(text, colon + 1);
  if (colon !== end || value !== colon + 1) tape.verbatim[object] = 0;
  return value;
}

/** A string, number or literal at `start`; the index after it, or -1 when there is none. */
function readScalar(tape: Tape, start: number): number {
  const { text } = tape;
  if (text.charCodeAt(start) === QUOTE) return readString(tape, start, PLAIN_STRING, ESCAPED_STRING);
  const end = numberEnd(text, start);
  if (end > start) {
    tape.add(NUMBER, start, end);
    return end;
  }
  for (const [word, kind] of LITERALS) {
    if (text.startsWith(word, start)) {
      tape.add(kind, start, start + word.length);
      return start + word.length;
    }
  }
  return -1;
}

/**
 * How a just closed object's keys are ordered: `repeated` when it names one key twice with the same
 * value, `ambiguous` when with different values (origins differ on which one wins). Two values are
 * compared by their canonical text in the order sent, the longer one built only as far as the
 * shorter one's length, so that comparing never costs more than the smaller value.
 */
function memberOrder(tape: Tape, object: number): 'ascending' | 'unsorted' | 'repeated' | 'ambiguous' {
  const children = tape.children(object);
  const keys: string[] = [];
  let ascending = true;
  for (let index = 0; index < children.length; index += 2) {
    keys.push(tape.stringOf(children[index]!));
    if (keys.length > 1 && !(keys[keys.length - 2]! < keys[keys.length - 1]!)) ascending = false;
  }
  if (ascending) return 'ascending';
  const firstValueByKey = new Map<string, number>();
  let repeated = false;
  for (const [index, key] of keys.entries()) {
    const value = children[2 * index + 1]!;
    const first = firstValueByKey.get(key);
    if (first === undefined) firstValueByKey.set(key, value);
    else if (!sameCanonicalText(tape, first, value)) return 'ambiguous';
    else repeated = true;
  }
  return repeated ? 'repeated' : 'unsorted';
}

function sameCanonicalText(tape: Tape, a: number, b: number): boolean {
  const shorter = tape.ends[a]! - tape.starts[a]! <= tape.ends[b]! - tape.starts[b]! ? a : b;
  const shorterText = canonicalTextOf(tape, shorter, Infinity, false)!;
  return canonicalTextOf(tape, shorter === a ? b : a, shorterText.length, false) === shorterText;
}

/**
 * The canonical text of a record's value, walked with an explicit stack: numbers as written, strings
 * as JSON.stringify spells them, members in the order sent or sorted by key, no whitespace.
 * Undefined when it would be longer than `limit` characters.
 */
function canonicalTextOf(tape: Tape, root: number, limit: number, sorted: boolean): string | undefined {
  let text = '';
  // The open containers: the next element's record of an array, the next member's index of an object.
  const containers: number[] = [];
  const nexts: number[] = [];
  const memberLists: Array<Member[] | undefined> = [];
  let record = root;
  for (;;) {
    if (record >= 0) {
      const kind = tape.kinds[record];
      // Text as sent is the sorted text only where every object within is sorted already.
      if (tape.verbatim[record] === 1 && (!sorted || tape.ordered[record] === 1)) {
        text += tape.text.slice(tape.starts[record], tape.ends[record]);
      } else if (kind === ARRAY || kind === OBJECT) {
        text += kind === ARRAY ? '[' : '{';
        containers.push(record);
        nexts.push(kind === ARRAY ? record + 1 : 0);
        memberLists.push(kind === ARRAY ? undefined : tape.membersOf(record, sorted));
      } else {
        text += scalarText(tape, record);
      }
      if (text.length > limit) return undefined;
      record = -1;
    }
    const top = containers.length - 1;
    if (top < 0) return text;
    const container = containers[top]!;
    const next = nexts[top]!;
    const members = memberLists[top];
    if (members === undefined ? next === tape.after[container] : next === members.length) {
      text += members === undefined ? ']' : '}';
      containers.pop();
      nexts.pop();
      memberLists.pop();
    } else if (members === undefined) {
      if (next !== container + 1) text += ',';
      record = next;
      nexts[top] = tape.after[next]!;
    } else {
      const member = members[next]!;
      text += `${next > 0 ? ',' : ''}${scalarText(tape, member.keyRecord)}:`;
      nexts[top] = next + 1;
      record = member.value;
    }
  }
}

/** A string's, key's, number's or literal's canonical text. */
function scalarText(tape: Tape, record: number): string {
  const kind = tape.kinds[record];
  if (kind === ESCAPED_STRING || kind === ESCAPED_KEY) return JSON.stringify(tape.stringOf(record));
  const raw = tape.text.slice(tape.starts[record], tape.ends[record]);
  if ((kind === PLAIN_STRING || kind === PLAIN_KEY) && LONE_SURROGATE.test(raw)) return JSON.stringify(tape.stringOf(record));
  return raw;
}

/**
 * A value read: its members, elements, string and canonical text are worked out on first access
 * and kept, since a request's body is read for a few members (`query`, `operationName`,
 * `variables`), not for every value in it; one class, so that a value costs one small object.
 */
class ReadValue implements JsonValue {
  readonly kind: JsonValue['kind'];
  private stringRead: string | undefined;
  private membersRead: ReadonlyMap<string, JsonValue> | undefined;
  private elementsRead: readonly JsonValue[] | undefined;
  private sortedText: string | undefined;
  private inOrderText: string | undefined;

  constructor(
    private readonly tape: Tape,
    private readonly record: number,
  ) {
    this.kind = KIND_NAMES[tape.kinds[record]!]!;
  }

  get raw(): string {
    return this.tape.text.slice(this.tape.starts[this.record], this.tape.ends[this.record]);
  }

  get string(): string | undefined {
    if (this.kind !== 'string') return undefined;
    return (this.stringRead ??= this.tape.stringOf(this.record));
  }

  get members(): ReadonlyMap<string, JsonValue> | undefined {
    if (this.kind !== 'object') return undefined;
    return (this.membersRead ??= new Map(this.tape.membersOf(this.record, true).map(({ key, value }) => [key, new ReadValue(this.tape, value)])));
  }

  get elements(): readonly JsonValue[] | undefined {
    if (this.kind !== 'array') return undefined;
    return (this.elementsRead ??= this.tape.children(this.record).map((element) => new ReadValue(this.tape, element)));
  }

  canonical(): string {
    return (this.sortedText ??= canonicalTextOf(this.tape, this.record, Infinity, true)!);
  }

  canonicalInOrder(): string {
    if (this.tape.ordered[this.record] === 1) return this.canonical();
    return (this.inOrderText ??= canonicalTextOf(this.tape, this.record, Infinity, false)!);
  }
}

function skipWhitespace(text: string, start: number): number {
  let index = start;
  for (;;) {
    const code = text.charCodeAt(index);
    if (code !== 0x20 && code !== 0x0a && code !== 0x0d && code !== 0x09) return index;
    index++;
  }
}

/** The index after the number starting at `start` (RFC 8259 section 6), or `start` when none does. */
function numberEnd(text: string, start: number): number {
  let index = start;
  if (text.charCodeAt(index) === MINUS) index++;
  const first = text.charCodeAt(index);
  if (first === ZERO) index++;
  else if (isDigit(first)) index = digitsEnd(text, index);
  else return start;
  if (text.charCodeAt(index) === DOT && isDigit(text.charCodeAt(index + 1))) index = digitsEnd(text, index + 1);
  const exponent = text.charCodeAt(index);
  if (exponent === 0x65 || exponent === 0x45) {
    const sign = text.charCodeAt(index + 1);
    const digits = sign === PLUS || sign === MINUS ? index + 2 : index + 1;
    if (isDigit(text.charCodeAt(digits))) index = digitsEnd(text, digits);
  }
  return index;
}

function digitsEnd(text: string, start: number): number {
  let index = start;
  while (isDigit(text.charCodeAt(index))) index++;
  return index;
}

function isDigit(code: number): boolean {
  return code >= ZERO && code <= NINE;
}

/**
 * The string opening at `start`, recorded as `plain` or, when it holds an escape, as `escaped`; the
 * index after its closing quote, or -1 when it is not a JSON string.
 */
function readString(tape: Tape, start: number, plain: number, escaped: number): number {
  const { text } = tape;
  let hasEscape = false;
  // JSON.stringify escapes a lone surrogate, which text handed to this reader may hold.
  let hasSurrogate = false;
  let index = start + 1;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      tape.add(hasEscape ? escaped : plain, start, index + 1, !hasEscape && !hasSurrogate);
      return index + 1;
    }
    if (code < 0x20) return -1;
    if (code !== BACKSLASH) {
      if (code >= 0xd800 && code <= 0xdfff) hasSurrogate = true;
      index++;
      continue;
    }
    hasEscape = true;
    const escape = text[index + 1];
    if (escape === 'u') {
      if (!HEX4.test(text.slice(index + 2, index + 6))) return -1;
      index += 6;
    } else {
      if (escape === undefined || ESCAPES[escape] === undefined) return -1;
      index += 2;
    }
  }
  return -1;
}

/** The value of a string (checked by readString) that holds escapes, decoded part by part. */
function decodeEscapedString(text: string, start: number, end: number): string {
  const parts: string[] = [];
  let chunkStart = start + 1;
  let index = start + 1;
  while (index < end - 1) {
    if (text.charCodeAt(index) !== BACKSLASH) {
      index++;
      continue;
    }
    parts.push(text.slice(chunkStart, index));
    const escape = text[index + 1]!;
    if (escape === 'u') {
      parts.push(String.fromCharCode(Number.parseInt(text.slice(index + 2, index + 6), 16)));
      index += 6;
    } else {
      parts.push(ESCAPES[escape]!);
      index += 2;
    }
    chunkStart = index;
  }
  parts.push(text.slice(chunkStart, end - 1));
  return parts.join('');
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const HEX4 = /^[0-9a-fA-F]{4}$/;
