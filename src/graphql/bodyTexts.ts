import { parse as parseContentType } from 'content-type';
import { contentCoding, decodedWithin, headerValues, type HeaderList } from '../http/index.js';

/**
 * The texts an origin may read a POST body svc-cache could not read as (README, Bad input): its
 * bytes as UTF-8, U+FFFD in place of what is not, and as the UTF charset its content type declares
 * (body-parser and express-graphql decode any `utf-*` one); each of those also for the body
 * `content-encoding` says is compressed, when it names one coding svc-cache can undo (`gzip`,
 * `deflate`, `br`: body-parser inflates them before reading). Decoding stops at `maxBytes`, the most
 * a readable body may have, so a compression bomb costs no more than a large body; a body that would
 * decode to more is `too-large`, and one that does not decode is not read so. At most a few texts,
 * each linear in the body.
 */
export function bodyTexts(headers: HeaderList, body: Uint8Array, maxBytes: number): string[] | 'too-large' {
  const coding = contentCoding(headers);
  const decoded = coding === undefined || coding === 'identity' ? undefined : decodedWithin(body, coding, maxBytes);
  // Larger than a readable body may be once decoded: refused as such a body is (README, Bad input).
  if (decoded === 'too-large') return decoded;
  const charsets = declaredCharsets(headers);
  const texts = new Set<string>();
  for (const bytes of decoded === undefined ? [body] : [body, decoded]) {
    texts.add(new TextDecoder().decode(bytes));
    for (const charset of charsets) for (const decoding of decodingsOf(charset, bytes)) texts.add(decodedText(bytes, decoding));
  }
  return [...texts];
}

/** How the bytes of a UTF other than UTF-8 are decoded. */
type UtfDecoding = 'utf-16le' | 'utf-16be' | 'utf-32le' | 'utf-32be' | 'utf-7' | 'utf-7-imap';

/** A UTF charset other than UTF-8, its name as iconv-lite (body-parser's decoder) matches it: `UTF_16-LE` is `utf16le`. */
type UtfCharset = 'utf16le' | 'utf16be' | 'utf16' | 'utf32le' | 'utf32be' | 'utf32' | 'utf7' | 'utf7imap';
const UTF_CHARSETS: ReadonlySet<string> = new Set<UtfCharset>(['utf16le', 'utf16be', 'utf16', 'utf32le', 'utf32be', 'utf32', 'utf7', 'utf7imap']);

function declaredCharsets(headers: HeaderList): Set<UtfCharset> {
  const charsets = new Set<UtfCharset>();
  for (const contentType of headerValues(headers, 'content-type')) {
    let charset: string | undefined;
    try {
      charset = parseContentType(contentType).parameters.charset;
    } catch {
      // body-parser reads a content type it cannot parse as declaring no charset: UTF-8.
      continue;
    }
    // iconv-lite's own matching: a `:2000`-style year suffix and every non-alphanumeric go.
    const name = charset?.toLowerCase().replace(/:\d{4}$|[^0-9a-z]/g, '');
    if (name !== undefined && UTF_CHARSETS.has(name)) charsets.add(name as UtfCharset);
  }
  return charsets;
}

/**
 * How bytes in a charset decode. Without a byte order mark, `utf-16` and `utf-32` are read in both
 * orders: iconv-lite guesses the order from the text, other decoders take big-endian (RFC 2781).
 */
function decodingsOf(charset: UtfCharset, bytes: Uint8Array): UtfDecoding[] {
  const [a, b, c, d] = bytes;
  switch (charset) {
    case 'utf16le':
      return ['utf-16le'];
    case 'utf16be':
      return ['utf-16be'];
    case 'utf16':
      return a === 0xff && b === 0xfe ? ['utf-16le'] : a === 0xfe && b === 0xff ? ['utf-16be'] : ['utf-16le', 'utf-16be'];
    case 'utf32le':
      return ['utf-32le'];
    case 'utf32be':
      return ['utf-32be'];
    case 'utf32':
      return a === 0xff && b === 0xfe && c === 0 && d === 0 ? ['utf-32le'] : a === 0 && b === 0 && c === 0xfe && d === 0xff ? ['utf-32be'] : ['utf-32le', 'utf-32be'];
    case 'utf7':
      return ['utf-7'];
    case 'utf7imap':
      return ['utf-7-imap'];
  }
}

/**
 * The text as iconv-lite decodes it: U+FFFD in place of what does not decode, a leading byte order
 * mark dropped, and trailing bytes short of a UTF-16 or UTF-32 code unit left out.
 */
function decodedText(bytes: Uint8Array, decoding: UtfDecoding): string {
  if (decoding === 'utf-16le' || decoding === 'utf-16be') return utf16Text(bytes, decoding);
  if (decoding === 'utf-7' || decoding === 'utf-7-imap') return utf7Text(bytes, decoding === 'utf-7-imap');
  return utf32Text(bytes, decoding === 'utf-32le');
}

function utf16Text(bytes: Uint8Array, decoding: 'utf-16le' | 'utf-16be'): string {
  return new TextDecoder(decoding).decode(bytes.subarray(0, bytes.byteLength - (bytes.byteLength % 2)));
}

/** TextDecoder knows no UTF-32 (the Encoding Standard leaves it out). */
function utf32Text(bytes: Uint8Array, littleEndian: boolean): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: string[] = [];
  let codePoints: number[] = [];
  for (let offset = 0; offset + 4 <= bytes.byteLength; offset += 4) {
    const codePoint = view.getUint32(offset, littleEndian);
    if (offset === 0 && codePoint === BYTE_ORDER_MARK) continue;
    codePoints.push(codePoint > 0x10ffff ? REPLACEMENT : codePoint);
    if (codePoints.length === CODE_POINTS_PER_CHUNK) {
      chunks.push(String.fromCodePoint(...codePoints));
      codePoints = [];
    }
  }
  chunks.push(String.fromCodePoint(...codePoints));
  return chunks.join('');
}

/**
 * UTF-7 (RFC 2152), or its IMAP form (RFC 3501 section 5.1.3: `&` and `,` for `+` and `/`): ASCII
 * as itself, a run of base64 after the shift character as UTF-16BE, one `-` right after the run
 * absorbed, and the shift character then `-` as the shift character. Unlike UTF-8, letters can so
 * hide: `+AG0-utation` is `mutation`.
 */
function utf7Text(bytes: Uint8Array, imap: boolean): string {
  const ascii = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1').replace(/[\x80-\xff]/g, '\ufffd');
  return ascii.replace(imap ? /&([A-Za-z0-9+/,]*)(-?)/g : /\+([A-Za-z0-9+/]*)(-?)/g, (_, base64: string, minus: string) => {
    if (base64 === '' && minus === '-') return imap ? '&' : '+';
    return utf16Text(Buffer.from(imap ? base64.replaceAll(',', '/') : base64, 'base64'), 'utf-16be');
  });
}

const REPLACEMENT = 0xfffd;
const BYTE_ORDER_MARK = 0xfeff;
/** Code points turned into a string at a time: few enough to pass as arguments. */
const CODE_POINTS_PER_CHUNK = 4096;
