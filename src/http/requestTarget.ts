import { cgiName, type HeaderList } from './headers.js';

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
 * How an origin may route `path`, no configured endpoint, to an endpoint's handler:
 * - `variant`: the same path once case, repeated and trailing slashes, matrix parameters (`;x`), dot
 *   segments and escapes of unreserved characters are set aside, as Express, Yoga, servlet
 *   containers and others variously do;
 * - `below`: a path below one (`/graphql/x`, in any of the variants' spellings), which a handler
 *   mounted on the endpoint as a prefix serves (Express's `app.use('/graphql', …)`, as Apollo
 *   Server 4 documents it), as other routes may be;
 * - `root`: any path, with an endpoint at `/` (Apollo's `startStandaloneServer` answers GraphQL on
 *   every path), where other routes are likely too;
 * - `suffix`: a URL, query string included, that ends with an endpoint path or it and a `/`, which
 *   GraphQL Yoga serves whatever comes before (`/x/graphql`, `/echo?/graphql`), and which other
 *   routes' URLs may end with too (`/login?next=/graphql`).
 * Dot segments are read both resolved and as sent: Express matches the raw path, so it routes
 * `/graphql/..` to a handler mounted on `/graphql`. Undefined when none. Such a request is not
 * cached (endpointOf), but a mutation in it is read for invalidation (README, Invalidation after
 * mutations).
 */
export function endpointRouting(path: string, endpoints: readonly string[] = DEFAULT_ENDPOINTS): EndpointRouting | undefined {
  const routed = routedPart(path);
  const shapes = endpointShapes(endpoints);
  const mayHoldDots = routed.includes('.') || routed.includes('%');
  for (const shape of mayHoldDots ? [routingShape(routed), routingShape(routed, { keepDots: true })] : [routingShape(routed)]) {
    if (shapes.includes(shape)) return 'variant';
    if (shapes.some((endpointShape) => endpointShape !== '' && shape.startsWith(`${endpointShape}/`))) return 'below';
  }
  if (endpoints.some((endpoint) => path.endsWith(endpoint) || path.endsWith(`${endpoint}/`))) return 'suffix';
  return shapes.includes('') ? 'root' : undefined;
}

export type EndpointRouting = 'variant' | 'below' | 'root' | 'suffix';

/** The endpoints' routing shapes, worked out once per configured list. */
function endpointShapes(endpoints: readonly string[]): readonly string[] {
  let shapes = shapesByEndpoints.get(endpoints);
  if (shapes === undefined) {
    shapes = endpoints.map((endpoint) => routingShape(endpoint));
    shapesByEndpoints.set(endpoints, shapes);
  }
  return shapes;
}

const shapesByEndpoints = new WeakMap<readonly string[], readonly string[]>();

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
function routingShape(path: string, { keepDots = false }: { keepDots?: boolean } = {}): string {
  const segments: string[] = [];
  for (const raw of path.split(/[/\\]/)) {
    const parameters = raw.indexOf(';');
    const bare = parameters < 0 ? raw : raw.slice(0, parameters);
    if (bare === '') continue;
    const segment = (bare.includes('%') ? decodeUnreserved(bare) : bare).toLowerCase();
    if (keepDots) segments.push(segment);
    else if (segment === '.') continue;
    else if (segment === '..') segments.pop();
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
 * The request headers the key holds, as sent, for the key (README, Cache key):
 * - the headers through which a proxy tells the origin where the client's request was for (host,
 *   scheme, port, path prefix, original URL): an origin that trusts its proxy (Express's `trust
 *   proxy`, Rack, Spring's ForwardedHeaderFilter, ASP.NET's forwarded headers, Symfony) builds links
 *   and routes with them, so an unkeyed value would reach other clients' answers. `forwarded`
 *   (RFC 7239) goes in without its `for=` parameters, each client's own address, or every client
 *   would have its own entry;
 * - `origin`, which an origin's CORS answer follows (`access-control-allow-origin`), often without
 *   `vary: origin` when the request had none (GraphQL Yoga): a browser's cross-origin request must
 *   not get an answer made without its `origin`;
 * - for a request a CSRF-preventing origin may refuse, what its refusal reads (`preflightPart`).
 * '' when the request has none; otherwise each `name:value`, NUL-separated (no header value holds a
 * NUL), by name and, within a name, in the order sent: an origin reads each header by its name, and
 * of a repeated one the first or the last, so two clients sending the same headers in another order
 * get one entry. One pass over the headers.
 */
export function keyedHeaders(headers: HeaderList, get: boolean): string {
  let key = '';
  let previous = '';
  let inOrder = true;
  let contentType: string | undefined;
  let preflightHeaders: Array<[string, string]> | undefined;
  for (const [name, value] of headers) {
    if (isKeyedHeader(name)) {
      // Envoy appends x-forwarded-proto: most requests have one such header, or several in order.
      if (name < previous) inOrder = false;
      previous = name;
      key += keyedHeaderPart(name, value);
    } else if (name === 'content-type') {
      contentType ??= value;
    } else if (PREFLIGHT_HEADERS.includes(name)) {
      (preflightHeaders ??= []).push([name, value]);
    }
  }
  const keyed = inOrder ? key : keyedHeadersByName(headers);
  // Most GETs: neither a content type nor a preflight header.
  if (contentType === undefined && preflightHeaders === undefined) return `${keyed}${PLAIN_REQUEST_PART}`;
  return `${keyed}${preflightPart(contentType, preflightHeaders, get)}`;
}

/**
 * Apollo Server 4 (`csrfPrevention`, on by default), GraphQL Yoga's CSRF plugin and Mercurius
 * (`csrfPrevention`) refuse (400 or 403) a request a page may send cross-site without a preflight,
 * each by its own reading: Apollo parses the content type and asks for one of its headers with a
 * value (repeated lines reach it joined, so never empty); Yoga tests whether the content type
 * starts with a CORS-safelisted one and asks for its header sent at all (versions before that
 * asked for it on every request); Mercurius takes only `application/json` and
 * `application/graphql` as spelt so, else one of its headers. The key holds what they read: the
 * content type as sent and, for each header, whether it was sent, sent once empty, or otherwise.
 * Such a request is answered only from what the origin gave a request it reads alike. '' only for
 * a POST of `application/json` as JSON clients spell it (jsonContentType) without those headers,
 * which only an older Yoga refuses, and then every such request alike; a GET that declares it is
 * keyed too, as express-graphql reads its empty body as JSON and refuses it.
 */
function preflightPart(contentType: string | undefined, preflightHeaders: HeaderList | undefined, get: boolean): string {
  if (preflightHeaders === undefined && contentType !== undefined && !get && JSON_CONTENT_TYPE.test(contentType)) return '';
  let states = '';
  for (const name of PREFLIGHT_HEADERS) {
    const values = (preflightHeaders ?? []).filter(([sent]) => sent === name);
    states += values.length === 0 ? '-' : values.length === 1 && values[0]![1] === '' ? '0' : '1';
  }
  return `\u0000:preflight ${states} ${contentType === undefined ? 'none' : `=${contentType}`}`;
}

/** Apollo Server 4's default `csrfPrevention.requestHeaders`, GraphQL Yoga's plugin's, then Mercurius's. */
const PREFLIGHT_HEADERS: readonly string[] = [
  'x-apollo-operation-name',
  'apollo-require-preflight',
  'x-graphql-yoga-csrf',
  'x-mercurius-operation-name',
  'mercurius-require-preflight',
];

/** `application/json`, alone or with parameters, in the lower case every JSON client sends. */
const JSON_CONTENT_TYPE = /^application\/json(;|$)/;

/** preflightPart of a request with neither a content type nor any of the preflight headers, worked out once. */
const PLAIN_REQUEST_PART = preflightPart(undefined, undefined, false);

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
 * Whether the key holds a request header (its lower-case name): a forwarding header, `origin` or a
 * CSRF header (keyedHeaders). An origin reads them, so none may carry the purge token, which
 * svc-cache removes from every request it forwards (src/config/schema.ts).
 */
export function isKeyedRequestHeader(name: string): boolean {
  return isKeyedHeader(name) || PREFLIGHT_HEADERS.includes(name);
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
 * sends the client's host as `x-original-host`, and Traefik its path as `x-forwarded-uri`. An
 * outside audit found scheme headers other frameworks read: Tornado's `xheaders` reads `x-scheme`
 * before `x-forwarded-proto`; Jetty's `x-proxied-https`; Echo and gunicorn `x-forwarded-protocol`,
 * Echo `x-url-scheme`; IIS-era `front-end-https`; and the path prefixes `x-forwarded-path` and
 * `x-script-name`. Not `x-forwarded-server`: Traefik and Apache set it to their own host name, so
 * keyed it would give each proxy replica entries of its own (a review).
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
  'x-scheme',
  'x-forwarded-protocol',
  'x-url-scheme',
  'x-proxied-https',
  'front-end-https',
  'x-forwarded-path',
  'x-script-name',
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
  if (!/for=/i.test(forwarded)) return forwarded;
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

