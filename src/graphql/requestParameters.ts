import { LRUCache } from 'lru-cache';
import type { GraphQLResponseMediaType } from '../http/index.js';
import { contentCoding, headerValues, mediaType, type HeaderList } from '../http/index.js';
import { graphQLErrorResponse, type HttpResponse } from '../http/index.js';
import { readJson, readJsonBytes, type JsonValue } from './canonicalVariables.js';
import { bodyTexts } from './bodyTexts.js';
import { multipartFields } from './multipartFields.js';
import { formDecode, ID_MEMBER, isIdParameterName, type GraphQLParams } from './httpRequest.js';

/**
 * GraphQL over HTTP request parameters read so that svc-cache keys the request the origin runs
 * (issue 12 items 3, 7, 10). Where origins would differ on what was asked (a parameter given twice
 * with different values, URL parameters beside a POST body, two content types), the request is
 * ambiguous: svc-cache answers 400 itself rather than store one reading under another's key.
 */

export interface GraphQLOperation {
  /** For running and analysing the operation; numbers in `variables` are JavaScript numbers. */
  params: GraphQLParams;
  /**
   * The variables' canonical text, every object's members sorted by key (see canonicalVariables.ts):
   * `{}` when absent or `null`; the key's form where the operation's variable types let no origin
   * see their order (variablesKeyText).
   */
  canonicalVariables: string;
  /**
   * The same with each variable's members in the order sent, the variables by name (origins read
   * them by name); the same string when no variable holds an object out of order.
   */
  orderedVariables: string;
  /**
   * The key's form of `extensions` but for those that change no answer (UNKEYED_EXTENSIONS): an
   * origin may read the rest (a tenant, a flag), so they are keyed; '' when there is none.
   */
  canonicalExtensions: string;
  /**
   * The values of the `documentId` and `doc_id` parameters (body members, and URL parameters beside
   * them): how a stored document is named by its id (src/persistedDocuments/storedDocument.ts). A
   * null stands for a naming svc-cache does not read, so that no id is taken from the request: a
   * value that is not a string or holds a `;`, and any other member or URL parameter, which an
   * origin may take its id from (Hot Chocolate reads `id`, others `queryId`). A null or empty id
   * names nothing and is left out.
   */
  documentIds: readonly (string | null)[];
  /**
   * Whether a `documentId` or `doc_id` member or URL parameter names a stored document, which Hot
   * Chocolate runs even beside a query text; not when its value is `null` or empty.
   */
  namesDocumentId: boolean;
  /**
   * The value of each `id` member and `id` URL parameter (a `&`-separated pair, its name in any
   * case, as ASP.NET Core reads it), null for one that is not a string or does not decode. Hot
   * Chocolate runs the document it kept under an `id` instead of a text beside it, so svc-cache
   * forwards a text without them (README, Operations svc-cache cannot see).
   */
  idsSent: readonly (string | null)[];
  /**
   * The key's form of `extensions` for a request read as a stored document: `persistedQuery` then
   * names what the origin runs, so it stays (README, Stored documents sent by id); '' when there is none.
   */
  canonicalExtensionsById: string;
}

export type AmbiguityReason =
  /** A GET parameter (or a POST's URL parameter) given twice with different values. */
  | 'repeated-parameter'
  /** A POST body member given twice with different values (also inside `variables`). */
  | 'repeated-member'
  /** A GraphQL parameter in a POST's URL that the body does not give the same. */
  | 'url-parameter'
  /** Two `content-type` lines that differ. */
  | 'conflicting-content-type';

export type UninterpretableReason =
  | 'content-type'
  | 'content-encoding'
  | 'invalid-utf8'
  | 'invalid-percent-encoding'
  /** A raw `;` in a GraphQL parameter, which some origins read as a separator (`urlParameters`). */
  | 'semicolon-in-parameter'
  /** More pairs than origins' parsers read (urlParameters). */
  | 'too-many-parameters'
  /** A GraphQL parameter of the URL given twice with the same value, which origins answer differently (urlParameters). */
  | 'parameter-repeated'
  | 'invalid-json'
  | 'body-not-object'
  | 'empty-batch'
  | 'batch-too-large'
  | 'query-not-string'
  | 'operation-name-not-string'
  | 'variables-not-object'
  | 'extensions-not-object';

export type RequestParameters =
  | ({
      kind: 'graphql';
      /**
       * Set when origins read the URL otherwise (an empty or `null` GET `variables`, a GraphQL URL
       * parameter given twice with the same value): read as graphql-http reads it, so that a
       * mutation in it is still refused over GET and invalidates over POST, but a query in it is
       * the origin's to answer, never stored nor answered from the cache (README, Bad input).
       */
      readDifferently?: UninterpretableReason;
      /**
       * The query string's parameters other than GraphQL's, as sent: an origin may read them (a
       * tenant, a version), so they are keyed (README, Cache key); '' when there are none.
       */
      otherUrlParameters: string;
      /**
       * A POST body's members other than GraphQL's, in the canonical text of `variables`: an origin
       * may read them (a `documentId`, a tenant), so they are keyed (README, Cache key); '' when
       * there are none.
       */
      otherMembers: string;
    } & GraphQLOperation)
  | { kind: 'batch'; operations: GraphQLOperation[] }
  | { kind: 'ambiguous'; reason: AmbiguityReason }
  /** Not read by svc-cache: the request goes to the origin untouched. */
  | { kind: 'uninterpretable'; reason: UninterpretableReason };

/** A batch longer than this is not read (nor cached): reading is bounded whatever a client sends. */
export const MAX_BATCH_OPERATIONS = 100;

const PARAMETER_NAMES = ['query', 'operationName', 'variables', 'extensions'] as const;
type ParameterName = (typeof PARAMETER_NAMES)[number];
const GRAPHQL_PARAMETERS: ReadonlySet<string> = new Set(PARAMETER_NAMES);

/** A GET's parameters, from its `:path`. */
export function readGetRequest(path: string): RequestParameters {
  return remembered(`G${path}`, () => readQueryString(path));
}

/**
 * A POST's parameters, from its JSON body (a batch when it is an array). GraphQL parameters in
 * its URL must match the body's: origins such as graphql-ruby, PHP servers and express-graphql
 * prefer URL parameters, so one the body lacks, or gives differently, would have them run another
 * request than svc-cache keys; that is ambiguous too.
 */
export function readPostRequest(path: string, headers: HeaderList, body: Uint8Array): RequestParameters {
  const contentTypes = headerValues(headers, 'content-type').map((value) => value.trim());
  if (contentTypes.some((value) => value !== contentTypes[0])) return { kind: 'ambiguous', reason: 'conflicting-content-type' };
  if (!isUtf8Json(contentTypes[0])) return { kind: 'uninterpretable', reason: 'content-type' };
  // The origin decodes a coded body first; read as it came, a body that is JSON and also valid
  // brotli (which has no magic bytes) would be keyed as one request while the origin runs another.
  if (contentCoding(headers) !== 'identity') return { kind: 'uninterpretable', reason: 'content-encoding' };
  if (path.length + body.byteLength > MAX_REMEMBERED_REQUEST_CHARS) return readJsonBody(path, body);
  // A path holds no CR (Envoy refuses it in a header), so the first one ends it in the key.
  return remembered(`P${path}\r${Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('latin1')}`, () => readJsonBody(path, body));
}

/**
 * `application/json` with no parameter but `charset=utf-8`: what svc-cache reads a body as. Origins
 * refuse (graphql-http answers 415) or decode otherwise a body that says another charset or
 * parameter, so such a request is the origin's to answer, and never a HIT. The type is taken only as
 * every origin reads it, written in lower case with nothing between it and its parameters: media
 * types are case-insensitive (RFC 9110 section 8.3.1), but GraphQL Yoga answers 415 to
 * `Application/JSON` and to `application/json ;charset=utf-8`. And the charset unquoted:
 * graphql-http compares the text, and answers `charset="utf-8"` 415.
 */
function isUtf8Json(contentType: string | undefined): boolean {
  // What nearly every client sends, checked first: a HIT pays no parsing for it.
  if (contentType === 'application/json') return true;
  return contentType !== undefined && contentType.startsWith('application/json;') && UTF8_CHARSET_PARAMETER.test(contentType.slice('application/json'.length));
}

const UTF8_CHARSET_PARAMETER = /^;[ \t]*charset=utf-8[ \t]*$/i;

/**
 * Popular queries arrive as the same bytes again and again, and reading them (strict JSON, canonical
 * variables, the URL's parameters) was about 5% of a HIT's CPU. What a request's bytes read as
 * depends on nothing else, so the readings of recent requests are remembered, up to
 * REMEMBERED_REQUEST_CHARS characters of requests in all; a request longer than
 * MAX_REMEMBERED_REQUEST_CHARS is read every time. Remembered readings are shared between requests,
 * so they are frozen: code that tried to change one would throw instead of changing another
 * request's.
 */
function remembered(bytes: string, read: () => RequestParameters): RequestParameters {
  if (bytes.length > MAX_REMEMBERED_REQUEST_CHARS) return read();
  const known = rememberedRequests.get(bytes);
  if (known !== undefined) return known;
  const parameters = deepFreeze(read());
  rememberedRequests.set(bytes, parameters);
  return parameters;
}

const MAX_REMEMBERED_REQUEST_CHARS = 16 * 1024;
const REMEMBERED_REQUEST_CHARS = 512 * 1024;
/**
 * What a reading can cost in memory per character of its request, at worst: JSON of many tiny
 * members (`{}` repeated) makes an object of some 50 bytes per two characters. Counting every
 * reading at that rate keeps the memo under about 16 MB whatever clients send.
 */
const WORST_BYTES_PER_CHAR = 32;
const rememberedRequests = new LRUCache<string, RequestParameters>({
  maxSize: WORST_BYTES_PER_CHAR * REMEMBERED_REQUEST_CHARS,
  sizeCalculation: (_, bytes) => WORST_BYTES_PER_CHAR * bytes.length,
});

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const member of Object.values(value)) deepFreeze(member);
  return Object.freeze(value);
}

function readQueryString(path: string): RequestParameters {
  const url = urlParameters(path);
  if (url.kind !== 'parameters') return url;
  const members = new Map<string, JsonValue>();
  let readDifferently: UninterpretableReason | undefined = url.repeated ? 'parameter-repeated' : undefined;
  for (const [name, value] of url.values) {
    if (name === 'variables' || name === 'extensions') {
      // Empty, or `null`: graphql-http reads the parameter left out, Apollo Server 4 answers 400.
      if (value === '') {
        readDifferently = `${name}-not-object`;
        continue;
      }
      const json = readJson(value);
      if (json === 'ambiguous') return { kind: 'ambiguous', reason: 'repeated-member' };
      if (json === 'invalid-json') return { kind: 'uninterpretable', reason: `${name}-not-object` };
      if (json.kind === 'null') readDifferently = `${name}-not-object`;
      members.set(name, json);
    } else {
      members.set(name, stringValue(value));
    }
  }
  return readByOrigins(operationOf(members, url.others), readDifferently);
}

/** `parameters`, marked as read otherwise by some origins (`readDifferently` given) when they are an operation. */
function readByOrigins(parameters: RequestParameters, readDifferently: UninterpretableReason | undefined): RequestParameters {
  return readDifferently !== undefined && parameters.kind === 'graphql' ? { ...parameters, readDifferently } : parameters;
}

/** The body's JSON and the URL's GraphQL parameters, which must agree with it. */
function readJsonBody(path: string, body: Uint8Array): RequestParameters {
  const url = urlParameters(path);
  if (url.kind !== 'parameters') return url;
  const json = readJsonBytes(body);
  if (json === 'ambiguous') return { kind: 'ambiguous', reason: 'repeated-member' };
  if (json === 'invalid-utf8' || json === 'invalid-json') return { kind: 'uninterpretable', reason: json };
  if (json.kind === 'array') {
    if (url.values.size > 0) return { kind: 'ambiguous', reason: 'url-parameter' };
    return batchOf(json.elements ?? [], url.others);
  }
  if (json.kind !== 'object') return { kind: 'uninterpretable', reason: 'body-not-object' };
  const members = json.members ?? new Map<string, JsonValue>();
  for (const [name, value] of url.values) {
    const member = members.get(name);
    if (member === undefined || !sameParameter(name, value, member)) return { kind: 'ambiguous', reason: 'url-parameter' };
  }
  return readByOrigins(operationOf(members, url.others), url.repeated ? 'parameter-repeated' : undefined);
}

/** svc-cache's answer to an ambiguous request: 400 with a GraphQL error, in the negotiated type. */
export function ambiguousRequestResponse(responseMediaType: GraphQLResponseMediaType): HttpResponse {
  const response = graphQLErrorResponse(
    400,
    'The request gives a GraphQL parameter more than one way (repeated with different values, or in both the URL and the body); send each once.',
    'AMBIGUOUS_REQUEST',
  );
  return { ...response, headers: [['content-type', `${responseMediaType}; charset=utf-8`]] };
}

/** `otherUrlParameters`: the URL's, as sent, which an origin may read a stored document's id from. */
function batchOf(elements: readonly JsonValue[], otherUrlParameters: string): RequestParameters {
  if (elements.length === 0) return { kind: 'uninterpretable', reason: 'empty-batch' };
  if (elements.length > MAX_BATCH_OPERATIONS) return { kind: 'uninterpretable', reason: 'batch-too-large' };
  const operations: GraphQLOperation[] = [];
  for (const element of elements) {
    if (element.kind !== 'object') return { kind: 'uninterpretable', reason: 'body-not-object' };
    const operation = operationOf(element.members ?? new Map(), otherUrlParameters);
    if (operation.kind !== 'graphql') return operation;
    const { params, canonicalVariables, orderedVariables, canonicalExtensions, documentIds, namesDocumentId, idsSent, canonicalExtensionsById } = operation;
    operations.push({ params, canonicalVariables, orderedVariables, canonicalExtensions, documentIds, namesDocumentId, idsSent, canonicalExtensionsById });
  }
  return { kind: 'batch', operations };
}

/** The operation the members give, checking each parameter's type as the spec requires it. */
function operationOf(members: ReadonlyMap<string, JsonValue>, otherUrlParameters: string): RequestParameters {
  const query = members.get('query');
  const operationName = members.get('operationName');
  const variables = members.get('variables');
  const extensions = members.get('extensions');
  if (query !== undefined && query.kind !== 'string' && query.kind !== 'null') return { kind: 'uninterpretable', reason: 'query-not-string' };
  if (operationName !== undefined && operationName.kind !== 'string' && operationName.kind !== 'null') {
    return { kind: 'uninterpretable', reason: 'operation-name-not-string' };
  }
  if (variables !== undefined && variables.kind !== 'object' && variables.kind !== 'null') {
    return { kind: 'uninterpretable', reason: 'variables-not-object' };
  }
  if (extensions !== undefined && extensions.kind !== 'object' && extensions.kind !== 'null') {
    return { kind: 'uninterpretable', reason: 'extensions-not-object' };
  }
  const canonicalVariables = variables?.kind === 'object' ? variables.canonical() : '{}';
  const orderedVariables = variables?.kind === 'object' ? byNameInOrder(variables) : '{}';
  return {
    kind: 'graphql',
    params: {
      query: query?.string,
      // An empty name is a name no operation has: origins differ on whether it means none (README, Bad input).
      operationName: operationName?.string,
      variables: JSON.parse(canonicalVariables) as Record<string, unknown>,
      extensions: extensions?.kind === 'object' ? (JSON.parse(extensions.canonical()) as Record<string, unknown>) : {},
    },
    canonicalVariables,
    orderedVariables,
    canonicalExtensions: extensions?.kind === 'object' ? canonicalWithout(extensions.members ?? new Map(), UNKEYED_EXTENSIONS) : '',
    ...documentNaming(members, otherUrlParameters),
    canonicalExtensionsById: extensions?.kind === 'object' ? canonicalWithout(extensions.members ?? new Map(), CLIENT_NAME_EXTENSIONS) : '',
    otherUrlParameters,
    otherMembers: canonicalWithout(members, GRAPHQL_PARAMETERS),
  };
}

/**
 * The names a stored document's id is read under: GraphQL over HTTP's and Relay's. Not Hot
 * Chocolate's `id`: it also names whatever the origin kept under it from a text sent beside it,
 * which svc-cache cannot know (README, Stored documents sent by id).
 */
const DOCUMENT_ID_NAMES: ReadonlySet<string> = new Set(['documentId', 'doc_id']);

/**
 * How the members, and the URL parameters (`pairs`, as sent), name a stored document:
 * GraphQLOperation's `documentIds`, `namesDocumentId` and `idsSent`.
 */
function documentNaming(
  members: ReadonlyMap<string, JsonValue>,
  pairs: string,
): { documentIds: Array<string | null>; namesDocumentId: boolean; idsSent: Array<string | null> } {
  const documentIds: Array<string | null> = [];
  const idsSent: Array<string | null> = [];
  let namesDocumentId = false;
  for (const [name, member] of members) {
    // A null or empty id names nothing, as origins read it (`documentId || …`).
    if (DOCUMENT_ID_NAMES.has(name)) {
      if (givesValue(member)) documentIds.push(member.kind === 'string' ? member.string! : null);
    } else if (!GRAPHQL_PARAMETERS.has(name)) {
      documentIds.push(null);
    }
    namesDocumentId ||= DOCUMENT_ID_NAMES.has(name) && givesValue(member);
    if (name === ID_MEMBER) idsSent.push(member.kind === 'string' ? member.string! : null);
  }
  for (const pair of pairs.split('&')) {
    if (pair === '') continue;
    const separator = pair.indexOf('=');
    const name = formDecode(separator < 0 ? pair : pair.slice(0, separator));
    const value = formDecode(separator < 0 ? '' : pair.slice(separator + 1));
    const documentId = name !== undefined && DOCUMENT_ID_NAMES.has(name);
    if (!(documentId && value === '')) documentIds.push(documentId && !pair.includes(';') ? (value ?? null) : null);
    namesDocumentId ||= namesIdParameter(pair);
    if (isIdParameterName(name)) idsSent.push(value ?? null);
  }
  return { documentIds, namesDocumentId, idsSent };
}

/** Whether a member is there with a value: not `null`, not an empty string. */
function givesValue(member: JsonValue | undefined): boolean {
  return member !== undefined && member.kind !== 'null' && member.string !== '';
}

/**
 * Whether a URL pair gives an id parameter a value, also as origins that split on `;` read it (Rack
 * 2, Python before 3.9.2), or has a name no origin decodes alike.
 */
function namesIdParameter(pair: string): boolean {
  return semicolonPieces(pair).some(({ name, value }) => name === undefined || (DOCUMENT_ID_NAMES.has(name) && value !== undefined && value !== ''));
}

/**
 * Extensions that do not change what the origin answers, so they stay out of the key (README,
 * Cache key): `persistedQuery`, which svc-cache resolves itself, and `clientLibrary`, which Apollo
 * Client 4 adds to every request to name itself for the server's usage reports. Keying it would
 * keep Apollo Client's requests from sharing entries with every other client's.
 */
const UNKEYED_EXTENSIONS: ReadonlySet<string> = new Set(['persistedQuery', 'clientLibrary']);
/** What a stored document's key leaves out of `extensions`: only the client's name (canonicalExtensionsById). */
const CLIENT_NAME_EXTENSIONS: ReadonlySet<string> = new Set(['clientLibrary']);

/**
 * The canonical text of an object's members but some, by name (an origin reads them by name), each
 * value's members in the order sent (an origin's own code may read them); '' when nothing else is left.
 */
function canonicalWithout(members: ReadonlyMap<string, JsonValue>, omitted: ReadonlySet<string>): string {
  const kept = [...members].filter(([name]) => !omitted.has(name));
  return kept.length === 0 ? '' : membersText(kept);
}

/** Whether a URL parameter's value gives what the body member gives. */
function sameParameter(name: ParameterName, urlValue: string, member: JsonValue): boolean {
  if (name === 'query' || name === 'operationName') return member.kind === 'string' && member.string === urlValue;
  const json = readJson(urlValue);
  return typeof json !== 'string' && sameJson(json, member);
}

/**
 * A value's text as origins run it: an object's members by name (an origin reads them by name), each
 * value's own members in the order sent (a custom scalar's value reaches the origin's code as sent).
 * GraphQLOperation's orderedVariables; two `variables` or `extensions` values with the same text run
 * alike at every origin (sameJson).
 */
function byNameInOrder(value: JsonValue): string {
  return value.members === undefined ? value.canonicalInOrder() : membersText(value.members);
}

/** `{"name":text,…}` of members already by name (JsonValue's members), each value's members in the order sent. */
function membersText(members: Iterable<readonly [string, JsonValue]>): string {
  const texts: string[] = [];
  for (const [name, value] of members) texts.push(`${JSON.stringify(name)}:${value.canonicalInOrder()}`);
  return `{${texts.join(',')}}`;
}

function sameJson(a: JsonValue, b: JsonValue): boolean {
  return byNameInOrder(a) === byNameInOrder(b);
}

/** A string parameter as a JsonValue, so GET and POST parameters are read by one function. */
function stringValue(value: string): JsonValue {
  const raw = JSON.stringify(value);
  return { kind: 'string', raw, string: value, canonical: () => raw, canonicalInOrder: () => raw };
}

type UrlParameters =
  /**
   * `others`: the pairs of other parameters, as sent, joined by `&`; `repeated`: a GraphQL
   * parameter came twice with the same value.
   */
  | { kind: 'parameters'; values: Map<ParameterName, string>; others: string; repeated: boolean }
  | Extract<RequestParameters, { kind: 'ambiguous' | 'uninterpretable' }>;

/**
 * The GraphQL parameters of a query string (`application/x-www-form-urlencoded`), decoded strictly:
 * URLSearchParams would turn bytes that are not UTF-8 into U+FFFD and keep a malformed `%` escape as
 * text, making different requests one key. Other parameters are kept as sent, for the key, empty
 * pairs (`&&`) too. Not svc-cache's to read (README, Bad input):
 * - a query string of more pairs, empty ones included, than an origin's parser reads (1,000 for
 *   Node's `querystring` and `qs`): pairs past it, `variables` among them, reach the key but not
 *   the origin;
 * - a raw `;` in a GraphQL parameter, or before one's name: origins that also split on it (Rack 2,
 *   Python before 3.9.2) read a second parameter where svc-cache reads a comment of the query
 *   (which the printed document leaves out of the key) or another parameter's text.
 */
function urlParameters(path: string): UrlParameters {
  const values = new Map<ParameterName, string>();
  const others: string[] = [];
  let repeated = false;
  const queryStart = path.indexOf('?');
  if (queryStart < 0) return { kind: 'parameters', values, others: '', repeated };
  const pairs = path.slice(queryStart + 1).split('&', MAX_QUERY_STRING_PAIRS + 1);
  if (pairs.length > MAX_QUERY_STRING_PAIRS) return { kind: 'uninterpretable', reason: 'too-many-parameters' };
  for (const pair of pairs) {
    const separator = pair.indexOf('=');
    const name = formDecode(separator < 0 ? pair : pair.slice(0, separator));
    if (pair.includes(';') && namesParameterAcrossSemicolons(pair)) {
      return { kind: 'uninterpretable', reason: 'semicolon-in-parameter' };
    }
    if (!isParameterName(name)) {
      others.push(pair);
      continue;
    }
    const value = formDecode(separator < 0 ? '' : pair.slice(separator + 1));
    if (value === undefined) return { kind: 'uninterpretable', reason: 'invalid-percent-encoding' };
    const seen = values.get(name);
    if (seen !== undefined) {
      if (!sameRepeat(name, seen, value)) return { kind: 'ambiguous', reason: 'repeated-parameter' };
      // The same value twice is one request to GraphQL Yoga and graphql-http, a 400 from Apollo Server 4.
      repeated = true;
    }
    values.set(name, value);
  }
  return { kind: 'parameters', values, others: others.join('&'), repeated };
}

/** Node's `querystring` and `qs` read this many pairs of a query string, and drop the rest. */
const MAX_QUERY_STRING_PAIRS = 1000;

/** Whether the pair, or a piece of it read as a pair of its own between `;`s, names a GraphQL parameter. */
function namesParameterAcrossSemicolons(pair: string): boolean {
  const [name] = pair.split('=', 1);
  return isParameterName(formDecode(name!)) || semicolonPieces(pair).some((piece) => isParameterName(piece.name));
}

/**
 * The pieces of a URL pair between `;`s, each read as a pair of its own, as origins that split on
 * `;` too read them: its name (leading spaces dropped) decoded, undefined when it cannot be, and its
 * value as sent, undefined without `=`.
 */
function semicolonPieces(pair: string): Array<{ name: string | undefined; value: string | undefined }> {
  return pair.split(';').map((piece) => {
    const separator = piece.indexOf('=');
    return {
      name: formDecode((separator < 0 ? piece : piece.slice(0, separator)).trimStart()),
      value: separator < 0 ? undefined : piece.slice(separator + 1),
    };
  });
}

/** A query text an origin may run, and the operation it names (README, Bad input). */
export interface PossibleOperation {
  /**
   * Undefined for a reading of the body that names no query but other members, as a stored document
   * sent by its id does (`{"documentId":…}`): the origin may run one svc-cache cannot see.
   */
  query: string | undefined;
  operationName: string | undefined;
}

/**
 * What an origin might run from a POST svc-cache could not read: origins differ on what they
 * accept (bytes that are not UTF-8 decoded with U+FFFD in their place, a body in its declared UTF
 * charset, a compressed body decoded, JSON under another content type, a form, a bare query as
 * `application/graphql`), so every reading of every text the body may be read as (bodyTexts.ts)
 * that finds a query counts: JSON whatever the content type says, a form or a bare query under its
 * own; and so do the `query` and `operationName` of its URL, which express-graphql and others read
 * on a POST too (see readPostRequest), and the `operations` field of a multipart upload
 * (multipartFields.ts). A mutation among them must still invalidate (README,
 * Invalidation after mutations). Linear in the request and bounded by `maxBodyBytes`; a batch is
 * read up to MAX_BATCH_OPERATIONS.
 */
export function possibleOperations(
  path: string,
  headers: HeaderList,
  body: Uint8Array,
  maxBodyBytes: number,
): PossibleOperation[] | 'ambiguous' | 'too-large' {
  const mediaTypes = headerValues(headers, 'content-type').map(mediaType);
  const bodyReadings: Reading[] = [];
  const texts = bodyTexts(headers, body, maxBodyBytes);
  if (texts === 'too-large') return texts;
  let textsRead = true;
  for (const text of texts) {
    const found = textReadings(text, mediaTypes);
    if (found === 'ambiguous') return found;
    textsRead &&= found.readable || noOriginReadsAsJson(text);
    bodyReadings.push(...found.readings);
  }
  // The GraphQL multipart request: the operations are the JSON of its `operations` field.
  const operationsFields = mediaTypes.includes('multipart/form-data') ? multipartFields(headers, body, 'operations', maxBodyBytes) : [];
  let fieldsRead = operationsFields.length > 0;
  for (const operations of operationsFields) {
    const found = textReadings(operations, []);
    if (found === 'ambiguous') return found;
    fieldsRead &&= found.readable;
    bodyReadings.push(...found.readings);
  }
  // A reading svc-cache cannot make may still run where it cannot see: Hot Chocolate reads the body
  // as UTF-8 JSON with trailing commas and comments, whatever charset or second content type other
  // readings follow. A multipart body is read by its operations fields.
  const read = operationsFields.length > 0 ? fieldsRead : textsRead;
  if (!read && body.byteLength > 0 && !bodyReadings.some((reading) => reading.unseen)) bodyReadings.push(UNSEEN_OPERATION);
  const urlReadings = queryStringReadings(path);
  if (urlReadings === 'ambiguous') return urlReadings;
  // express-graphql takes each parameter from the URL when it is there, else from the body: a query
  // from one may then run under the other's operationName, so no name narrows which mutation runs.
  const mixed = bodyReadings.length > 0 && urlReadings.some((reading) => !reading.unseen);
  return [...bodyReadings, ...urlReadings].flatMap(({ query, operationName, unseen }): PossibleOperation[] => {
    if (unseen) return [{ query: undefined, operationName: undefined }];
    return query === undefined ? [] : [{ query, operationName: mixed ? undefined : operationName }];
  });
}

/** The GraphQL parameters one reading finds: a query, an operationName, or both. */
interface Reading {
  query: string | undefined;
  operationName: string | undefined;
  /**
   * The origin may run what svc-cache cannot see: a stored document named by its id (a JSON object
   * without a query text but with other members, or with an id beside its text, or a form or URL
   * with an id parameter), or a body svc-cache cannot read as JSON.
   */
  unseen?: true;
}

const UNSEEN_OPERATION: Reading = { query: undefined, operationName: undefined, unseen: true };
const FORM = 'application/x-www-form-urlencoded';
const BARE_QUERY = 'application/graphql';

/**
 * Whether no JSON parser, however lenient, reads a text: it holds bytes that were not UTF-8
 * (replaced by U+FFFD: a compressed body's raw bytes) or a NUL outside any string (another UTF's
 * bytes read as UTF-8). Other readings of its body are then what an origin reads.
 */
function noOriginReadsAsJson(text: string): boolean {
  return text.includes('\uFFFD') || text.includes('\u0000');
}

/**
 * A text's readings, and whether it was read: JSON, or, when the content type is nothing else, a
 * bare query or a form that gives `query` or `operationName` (a form reads anything, so its content
 * type alone does not make a text read).
 */
function textReadings(text: string, mediaTypes: readonly string[]): { readings: Reading[]; readable: boolean } | 'ambiguous' {
  const readings: Reading[] = [];
  const json = readJson(text.trim());
  // Which of a repeated member an origin runs is the origin's choice, as for a readable body.
  if (json === 'ambiguous') return json;
  const objects = typeof json === 'string' ? [] : json.kind === 'array' ? (json.elements ?? []).slice(0, MAX_BATCH_OPERATIONS) : [json];
  // Origins run every element of a batch svc-cache reads only the first ones of.
  if (typeof json !== 'string' && json.kind === 'array' && (json.elements?.length ?? 0) > MAX_BATCH_OPERATIONS) readings.push(UNSEEN_OPERATION);
  for (const object of objects) {
    const [query, operationName] = [object.members?.get('query')?.string, object.members?.get('operationName')?.string];
    if (query === undefined && namesStoredDocument(object)) readings.push(UNSEEN_OPERATION);
    else if (query !== undefined || operationName !== undefined) readings.push({ query, operationName });
    // Hot Chocolate runs the document a documentId (or an id it kept) names even beside a query text;
    // a body svc-cache does not read goes as it came, `id` included.
    if (query !== undefined && [...DOCUMENT_ID_NAMES, ID_MEMBER].some((name) => givesValue(object.members?.get(name)))) readings.push(UNSEEN_OPERATION);
  }
  let formRead = false;
  if (mediaTypes.includes(FORM)) {
    const form = formReadings(text);
    if (form === 'ambiguous') return form;
    formRead = mediaTypes.every((type) => type === FORM) && form.some((reading) => !reading.unseen);
    readings.push(...form);
  }
  if (mediaTypes.includes(BARE_QUERY)) readings.push({ query: text, operationName: undefined });
  const bareQuery = mediaTypes.length > 0 && mediaTypes.every((type) => type === BARE_QUERY);
  return { readings, readable: typeof json !== 'string' || formRead || bareQuery };
}

/**
 * An object with no query text but a member besides `query` and `operationName` (a `documentId`,
 * Relay's `doc_id`): the origin may run the document it names, as the readable path's `no-query`
 * does (README, Invalidation after mutations).
 */
function namesStoredDocument(object: JsonValue): boolean {
  return [...(object.members?.keys() ?? [])].some((name) => name !== 'query' && name !== 'operationName');
}

/** The URL's readings, split on `&` and, where it holds a raw `;`, as origins that split on both read it too (urlParameters). */
function queryStringReadings(path: string): Reading[] | 'ambiguous' {
  const queryStart = path.indexOf('?');
  if (queryStart < 0) return [];
  const queryString = path.slice(queryStart + 1);
  const readings = formReadings(queryString);
  if (readings === 'ambiguous' || !queryString.includes(';')) return readings;
  const semicolonReadings = formReadings(queryString.replaceAll(';', '&'));
  return semicolonReadings === 'ambiguous' ? semicolonReadings : [...readings, ...semicolonReadings];
}

/**
 * A form's (or a query string's) `query` and `operationName`, decoded leniently as origins decode
 * them (URLSearchParams, querystring); one given twice with different values is ambiguous. An id
 * parameter names a stored document to an origin that reads it there (Hive Gateway reads a POST's
 * `documentId` from its URL, Hot Chocolate an `id` in any case).
 */
function formReadings(text: string): Reading[] | 'ambiguous' {
  const form = new URLSearchParams(text);
  const [queries, names] = [new Set(form.getAll('query')), new Set(form.getAll('operationName'))];
  if (queries.size > 1 || names.size > 1) return 'ambiguous';
  const [[query], [operationName]] = [[...queries], [...names]];
  const readings: Reading[] = query === undefined && operationName === undefined ? [] : [{ query, operationName }];
  if ([...form].some(([name, value]) => value !== '' && (DOCUMENT_ID_NAMES.has(name) || isIdParameterName(name)))) readings.push(UNSEEN_OPERATION);
  return readings;
}

/** Repeats agree when equal, or, for JSON parameters, equal as canonical JSON (origins run the same). */
function sameRepeat(name: ParameterName, first: string, second: string): boolean {
  if (first === second) return true;
  if (name !== 'variables' && name !== 'extensions') return false;
  const [a, b] = [readJson(first), readJson(second)];
  return typeof a !== 'string' && typeof b !== 'string' && sameJson(a, b);
}

function isParameterName(name: string | undefined): name is ParameterName {
  return (PARAMETER_NAMES as readonly (string | undefined)[]).includes(name);
}

