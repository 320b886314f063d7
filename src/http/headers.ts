/**
 * HTTP headers as Envoy hands them over: lower-case names, pseudo-headers (`:method`, `:path`,
 * `:status`) included, and a name may repeat (Envoy keeps each occurrence as its own entry).
 */
export type HeaderList = ReadonlyArray<readonly [name: string, value: string]>;

/** All values of a header, in order. */
export function headerValues(headers: HeaderList, name: string): string[] {
  const values: string[] = [];
  for (const [key, value] of headers) if (key === name) values.push(value);
  return values;
}

/** The names a `Vary` field lists across its lines, trimmed and lower-cased, `*` included (RFC 9110 section 12.5.5). */
export function varyNames(headers: HeaderList): string[] {
  return headerValues(headers, 'vary').flatMap((line) =>
    line
      .split(',')
      .map((part) => part.trim().toLowerCase())
      .filter((name) => name !== ''),
  );
}

/** The header's value, repeated occurrences joined with ", " as HTTP field combination allows. */
export function headerValue(headers: HeaderList, name: string): string | undefined {
  // Read several times per request: one pass, and no array for the usual one occurrence.
  let joined: string | undefined;
  for (const [key, value] of headers) if (key === name) joined = joined === undefined ? value : `${joined}, ${value}`;
  return joined;
}

/**
 * Every value of one cookie, in order of occurrence across the `cookie` lines (which may repeat over
 * HTTP/2). A name may repeat: a browser sends each cookie whose Path and Domain match, the more
 * specific path first (RFC 6265 section 5.4), and cookie parsers differ on which one they keep.
 */
export function cookieValues(headers: HeaderList, name: string): string[] {
  const values: string[] = [];
  for (const header of headerValues(headers, 'cookie')) {
    for (const pair of header.split(';')) {
      const separator = pair.indexOf('=');
      if (separator < 0) continue;
      if (pair.slice(0, separator).trim() === name) values.push(pair.slice(separator + 1).trim());
    }
  }
  return values;
}

/** The media type of a content-type value, lower-cased and without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}
