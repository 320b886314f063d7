import busboy from 'busboy';
import { headerValue, type HeaderList } from '../http/index.js';

/**
 * The values of the fields named `name` in a `multipart/form-data` body, as an origin's multipart
 * parser reads them: the GraphQL multipart request (apollo-upload-client, graphql-upload) sends its
 * operations as the JSON field `operations`, beside the files (README, Bad input). busboy reads the
 * body given at once synchronously; files are skipped unread, a field is cut at `maxBytes` (a body
 * svc-cache reads is no larger), and a body it cannot parse gives what it read so far.
 */
export function multipartFields(headers: HeaderList, body: Uint8Array, name: string, maxBytes: number): string[] {
  const contentType = headerValue(headers, 'content-type');
  if (contentType === undefined) return [];
  const values: string[] = [];
  try {
    const parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: maxBytes, parts: MAX_PARTS } });
    parser.on('field', (field, value) => {
      if (field === name) values.push(value);
    });
    parser.on('file', (_field, stream) => stream.resume());
    // A malformed body is the origin's to refuse; what was read before it still counts.
    parser.on('error', () => undefined);
    parser.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  } catch {
    // No boundary, or another content type busboy refuses: no fields.
  }
  return values;
}

/** Parts read per body: uploads of many files hold few fields before them. */
const MAX_PARTS = 1000;
