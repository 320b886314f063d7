import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
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

/** The decoded body, or undefined when it is corrupt or would exceed `maxBytes` (a compression bomb). */
export function decodedWithin(body: Uint8Array, coding: Exclude<ContentCoding, 'identity'>, maxBytes: number): Buffer | undefined {
  const options = { maxOutputLength: maxBytes };
  try {
    if (coding === 'gzip') return gunzipSync(body, options);
    if (coding === 'deflate') return inflateSync(body, options);
    return brotliDecompressSync(body, options);
  } catch {
    return undefined;
  }
}
