import { cgiName, mediaType, type HeaderList } from './headers.js';

/**
 * Which endpoint a request is for and which host it names, as the cache key holds them (issue 12
 * item 6). Throughout, two spellings are one only when every origin must treat them alike: keying
 * two spellings apart costs a miss, keying them together can serve one origin answer for another.
 */

/** The paths svc-cache interprets when the config names none. */
export const DEFAULT_ENDPOINTS: readonly string[] = ['/graphql'];

/**
 * The configured endpoint `path` (a `:path`) is for, or undefined: that request passes untouched and
 * unread. Only the query string is dropped; the rest must match exactly. Paths are case-sensitive
 * (RFC 3986 section 6.2.2.1), and `/graphql/`, `//graphql`, `/graphql;x` and `/%67raphql` are other
 * paths: origins differ on whether they route them to the same handler (matrix parameters, slash
 * merging, percent-decoding), and passing what svc-cache cannot place is always safe.
 */
export function endpointOf(path: string, endpoints: readonly string[] = DEFAULT_ENDPOINTS): string | undefined {
  const target = withoutQuery(path);
  return endpoints.includes(target) ? target : undefined;
}

/**
 * True when `path` is no configured endpoint but an origin may route it to one: the same path once
 * case, repeated and trailing slashes, matrix parameters (`;x`), dot segments and escapes of
 * unreserved characters are set aside, as Express, Yoga, servlet containers and others variously
 * do. Such a request is not cached (endpointOf), but a mutation in it is read for invalidation
 * (README, Invalidation after mutations).
 */
export function isEndpointVariant(path: string, endpoints: readonly string[] = DEFAULT_ENDPOINTS): boolean {
  const shape = routingShape(routedPart(path));
  return endpoints.some((endpoint) => routingShape(endpoint) === shape);
}

/**
 * True when `path` is below an endpoint (`/graphql/x`, in any of the variants' spellings), which a
 * handler mounted on the endpoint as a prefix serves (Express's `app.use('/graphql', …)`, as Apollo
 * Server 4 documents it), as other routes may be. A request there is read as one to a variant is: a
 * mutation a reading of a POST finds invalidates (README, Invalidation after mutations).
 */
export function isBelowEndpoint(path: string, endpoints: readonly string[] = DEFAULT_ENDPOINTS): boolean {
  const shape = routingShape(routedPart(path));
  // Below `/` is every path: an endpoint at the root makes no prefix of its own.
  return endpoints.some((endpoint) => {
    const endpointShape = routingShape(endpoint);
    return endpointShape !== '' && shape.startsWith(`${endpointShape}/`);
  });
}

function withoutQuery(path: string): string {
  const queryStart = path.indexOf('?');
  return queryStart < 0 ? path : path.slice(0, queryStart);
}

/**
 * The path an origin routes on: without the query string, nor a fragment, which a URL parser drops
 * (Envoy refuses a path with one by default, but may be set to pass it).
 */
function routedPart(path: string): string {
  const end = path.search(/[?#]/);
  return end < 0 ? path : path.slice(0, end);
}

/**
 * The segments an origin that normalises leniently routes on, lower-cased and joined by `/`. A `\`
 * separates segments as `/` does: WHATWG URL parsers (Node's `URL`, which Yoga and other Node
 * servers route with) read it so in an http(s) URL.
 */
function routingShape(path: string): string {
  const segments: string[] = [];
  for (const raw of path.split(/[/\\]/)) {
    const segment = decodeUnreserved(raw.split(';', 1)[0]!).toLowerCase();
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  return segments.join('/');
}

/** `%67` is `g` to most origins; escapes of reserved characters keep their meaning (RFC 3986 section 2.3). */
function decodeUnreserved(segment: string): string {
  return segment.replace(/%([0-9a-fA-F]{2})/g, (escape, hex: string) => {
    const character = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(character) ? character : escape.toUpperCase();
  });
}

/**
 * The request headers the key holds, as sent, and whether a CSRF-preventing origin refuses the
 * request (`withoutPreflight`), for the key (README, Cache key):
 * - the headers through which a proxy tells the origin where the client's request was for (host,
 *   scheme, port, path prefix, original URL): an origin that trusts its proxy (Express's `trust
 *   proxy`, Rack, Spring's ForwardedHeaderFilter, ASP.NET's forwarded headers, Symfony) builds links
 *   and routes with them, so an unkeyed value would reach other clients' answers. `forwarded`
 *   (RFC 7239) goes in without its `for=` parameters, each client's own address, or every client
 *   would have its own entry;
 * - `origin`, which an origin's CORS answer follows (`access-control-allow-origin`), often without
 *   `vary: origin` when the request had none (GraphQL Yoga): a browser's cross-origin request must
 *   not get an answer made without its `origin`.
 * '' when the request has none; otherwise each `name:value`, NUL-separated (no header value holds a
 * NUL), by name and, within a name, in the order sent: an origin reads each header by its name, and
 * of a repeated one the first or the last, so two clients sending the same headers in another order
 * get one entry. A request sent without a preflight adds a part no header can give.
 */
export function keyedHeaders(headers: HeaderList): string {
  const sent = sentKeyedHeaders(headers);
  return withoutPreflight(headers) ? `${sent}${WITHOUT_PREFLIGHT}` : sent;
}

/**
 * Whether an origin that prevents CSRF as Apollo Server 4 (`csrfPrevention`, on by default) and
 * GraphQL Yoga's CSRF plugin do refuses the request (400 or 403) as one a browser may send
 * cross-site without a preflight: no content type, or one a simple request may have, and none of the
 * headers they ask for. Keyed apart, such a request (most often a GET) is answered only from what the
 * origin gave a request like it, never from a POST's or a preflighted GET's entry.
 */
function withoutPreflight(headers: HeaderList): boolean {
  let contentType: string | undefined;
  for (const [name, value] of headers) {
    if (PREFLIGHT_HEADERS.has(name) && value !== '') return false;
    if (name === 'content-type') contentType ??= value;
  }
  return contentType === undefined || SIMPLE_REQUEST_CONTENT_TYPES.has(mediaType(contentType));
}

/** Apollo Server 4's default `csrfPrevention.requestHeaders`, and GraphQL Yoga's plugin's. */
const PREFLIGHT_HEADERS: ReadonlySet<string> = new Set(['x-apollo-operation-name', 'apollo-require-preflight', 'x-graphql-yoga-csrf']);

/** The content types a browser sends cross-site without a preflight (Fetch standard, CORS-safelisted). */
const SIMPLE_REQUEST_CONTENT_TYPES: ReadonlySet<string> = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/** A header name holds no `:`; the part marks a request sent without a preflight (withoutPreflight). */
const WITHOUT_PREFLIGHT = '\u0000:without-preflight';

function sentKeyedHeaders(headers: HeaderList): string {
  let key = '';
  let previous = '';
  for (const [name, value] of headers) {
    if (!isKeyedHeader(name)) continue;
    // Envoy appends x-forwarded-proto: most requests have one such header, or several in order.
    if (name < previous) return keyedHeadersByName(headers);
    previous = name;
    key += keyedHeaderPart(name, value);
  }
  return key;
}

function keyedHeadersByName(headers: HeaderList): string {
  const sent = headers.filter(([name]) => isKeyedHeader(name));
  // Array.prototype.sort is stable: a repeated header keeps its order.
  sent.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sent.map(([name, value]) => keyedHeaderPart(name, value)).join('');
}

function keyedHeaderPart(name: string, value: string): string {
  return `\u0000${name}:${name === 'forwarded' ? withoutForParameters(value) : value}`;
}

/**
 * A keyed header, also under a name with `_` for `-` (`x_forwarded_host`), which CGI-style
 * origins (WSGI, Rack, PHP) read as the same header (headerSpeltOtherwise): keyed as sent, it keeps
 * such a request's answer apart from others'.
 */
function isKeyedHeader(name: string): boolean {
  return KEYED_HEADERS.has(name) || (name.includes('_') && KEYED_CGI_NAMES.has(cgiName(name)));
}

/**
 * Spring and Rack read `x-forwarded-ssl` and `-prefix`; Rack `x-forwarded-scheme`; IIS's URL Rewrite
 * and Symfony route by `x-original-url` and `x-rewrite-url`; IIS's Application Request Routing
 * sends the client's host as `x-original-host`, and Traefik its path as `x-forwarded-uri`.
 */
const KEYED_HEADERS: ReadonlySet<string> = new Set([
  'forwarded',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-ssl',
  'x-forwarded-scheme',
  'x-original-url',
  'x-rewrite-url',
  'x-original-host',
  'x-forwarded-uri',
  'origin',
]);

/** KEYED_HEADERS as CGI-style origins read them (isKeyedHeader). */
const KEYED_CGI_NAMES: ReadonlySet<string> = new Set([...KEYED_HEADERS].map(cgiName));

/**
 * A `forwarded` value's elements without their well-formed `for=` pairs (a token or a quoted string,
 * RFC 7239 section 4), the rest as sent: a malformed one may hide another parameter from a lenient
 * origin (`for=192.0.2.1 host=evil`), so it stays in the key.
 */
function withoutForParameters(forwarded: string): string {
  return forwarded
    .split(',')
    .map((element) =>
      element
        .split(';')
        .filter((pair) => !FOR_PAIR.test(pair))
        .join(';'),
    )
    .join(',');
}

const FOR_PAIR = /^\s*for=("[^"\\]*"|[!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*$/i;

const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: '80', https: '443' };

/**
 * The host part of the key from `:authority`: lower-cased (host names are case-insensitive, RFC 3986
 * section 3.2.2), the scheme's default port dropped, IPv6 literals kept in their brackets. A
 * trailing dot is kept: `example.com.` may be a different virtual host to the origin's router.
 */
export function hostKey(authority: string, scheme: string): string {
  const host = authority.trim().toLowerCase();
  const defaultPort = DEFAULT_PORTS[scheme.toLowerCase()];
  if (defaultPort === undefined) return host;
  const suffix = `:${defaultPort}`;
  // The port follows the last colon, after an IPv6 literal's closing bracket if there is one.
  const portColon = host.lastIndexOf(':');
  const isPort = portColon > host.lastIndexOf(']');
  return isPort && host.endsWith(suffix) && host.length - suffix.length === portColon ? host.slice(0, portColon) : host;
}
