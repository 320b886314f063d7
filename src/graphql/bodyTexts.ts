import { contentCoding, decodedWithin, type HeaderList } from '../http/index.js';

/**
 * The texts an origin may read a POST body svc-cache could not read as (README, Bad input): its
 * bytes as UTF-8, U+FFFD in place of what is not, and, when `content-encoding` names one coding
 * svc-cache can undo (`gzip`, `deflate`, `br`: body-parser inflates them before reading), the body
 * it decodes to. Decoding stops at `maxBytes`, the most a readable body may have, so a compression
 * bomb costs no more than a large body; a body that does not decode within it is not read so.
 */
export function bodyTexts(headers: HeaderList, body: Uint8Array, maxBytes: number): string[] {
  const coding = contentCoding(headers);
  const decoded = coding === undefined || coding === 'identity' ? undefined : decodedWithin(body, coding, maxBytes);
  return (decoded === undefined ? [body] : [body, decoded]).map((bytes) => new TextDecoder().decode(bytes));
}
