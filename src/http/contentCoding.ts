import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { headerValue, type HeaderList } from './headers.js';

/** The codings svc-cache can undo, as `content-encoding` names them (RFC 9110 section 8.4.1). */
export type ContentCoding = 'identity' | 'gzip' | 'deflate' | 'br';

/** The body's one content coding, or undefined when it is another or several. */
export function contentCoding(headers: HeaderList): ContentCoding | undefined {
  const encoding = headerValue(headers, 'content-encoding')?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return 'identity';
  if (encoding === 'x-gzip') return 'gzip';
  return encoding === 'gzip' || encoding === 'deflate' || encoding === 'br' ? encoding : undefined;
}

/**
 * The decoded body; `too-large` when it would exceed `maxBytes` (a compression bomb, or just a large
 * body), undefined when it is corrupt. `deflate` is zlib-wrapped (RFC 9110 section 8.4.1.2), but
 * some servers (ASP.NET Core's request decompression) read it raw, so raw DEFLATE is tried too.
 */
export function decodedWithin(body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>, maxBytes: number): Buffer | 'too-large' | undefined {
  const options = { maxOutputLength: maxBytes };
  try {
    if (coding === 'gzip') return gunzipSync(body, options);
    if (coding === 'br') return brotliDecompressSync(body, options);
    try {
      return inflateSync(body, options);
    } catch (error) {
      if (isTooLarge(error)) throw error;
      return inflateRawSync(body, options);
    }
  } catch (error) {
    return isTooLarge(error) ? 'too-large' : undefined;
  }
}

function isTooLarge(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ERR_BUFFER_TOO_LARGE';
}
