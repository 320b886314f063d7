import { readJson, readJsonBytes, type JsonValue } from './canonicalVariables.js';

/**
 * GraphQL over HTTP request parameters (the GraphQL over HTTP spec, section "Request Parameters"),
 * as svc-cache decides on them (read by requestParameters.ts).
 */
export interface GraphQLParams {
  query: string | undefined;
  operationName: string | undefined;
  /** Absent and `null` both mean "no variables". */
  variables: Record<string, unknown>;
  extensions: Record<string, unknown>;
}

/** What svc-cache changes in a request it rewrites for the origin (a persisted query expanded, fields added, an `id` left out). */
export interface OriginChanges {
  /** Replaces the client's text; undefined keeps the client's as sent. */
  query: string | undefined;
  /**
   * Leaves the `persistedQuery` member out of `extensions` (a rewritten query no longer matches the
   * client's hash), every other member with its text as sent; `extensions` left empty goes.
   */
  withoutPersistedQuery: boolean;
  /**
   * Leaves out every `id` member and URL parameter (its name in any case): Hot Chocolate runs the
   * document it kept under an `id` instead of the text beside it (README, Operations svc-cache
   * cannot see).
   */
  withoutId: boolean;
}

/** The body member Hot Chocolate reads a kept document's id from. */
export const ID_MEMBER = 'id';

/** Whether a URL parameter's decoded name is Hot Chocolate's `id`, in any case (ASP.NET Core reads names so). */
export function isIdParameterName(name: string | undefined): boolean {
  return name?.toLowerCase() === ID_MEMBER;
}

/**
 * The request as the origin should get it when svc-cache changed the query text or the extensions,
 * or leaves its `id` out: a new POST body (and a new `:path` when its URL has an `id`), or a new
 * `:path` for a GET; undefined where nothing changed. Every other parameter keeps its exact text as
 * sent (its raw JSON member, its URL pair), never re-serialised: the origin then runs exactly the
 * request svc-cache keyed (`1.0` stays `1.0`, `9007199254740993` keeps its digits). Only the order
 * of a body's members may change, which JSON gives no meaning (RFC 8259 section 4).
 */
export function rewrittenForOrigin(method: 'GET' | 'POST', path: string, body: Buffer, changes: OriginChanges): { path?: string; body?: Buffer } {
  if (method === 'GET') return { path: rewrittenPath(path, changes) };
  const rewritten = rewrittenBody(body, changes);
  return { ...(rewritten === undefined ? {} : { body: rewritten }), ...(changes.withoutId && hasIdParameter(path) ? { path: rewrittenPath(path, ID_ONLY) } : {}) };
}

/**
 * A batch's body with each operation changed as `changes` says at its index (a persisted query
 * expanded, its `id` left out), the rest of each as sent; its URL is the batch's, without an `id`
 * parameter when an operation leaves its `id` out, as rewrittenForOrigin's.
 */
export function batchForOrigin(path: string, body: Buffer, changes: ReadonlyArray<OriginChanges | undefined>): { path?: string; body: Buffer } {
  const json = readJsonBytes(body);
  // Only arrays of objects are read as batches; anything else is sent as it came.
  if (typeof json === 'string' || json.kind !== 'array') return { body };
  const elements = (json.elements ?? []).map((element, index) => {
    const changed = changes[index];
    return changed !== undefined && element.kind === 'object' ? objectText(element.members ?? new Map(), changed) : element.raw;
  });
  const withoutId = changes.some((changed) => changed?.withoutId === true);
  return { body: Buffer.from(`[${elements.join(',')}]`), ...(withoutId && hasIdParameter(path) ? { path: rewrittenPath(path, ID_ONLY) } : {}) };
}

/**
 * Whether the `&`-separated `pairs` of a query string have a parameter of this lower-case name,
 * decoded and in any case, as ASP.NET Core reads names.
 */
export function hasUrlParameter(pairs: string, name: string): boolean {
  return pairs.split('&').some((pair) => parameterName(pair)?.toLowerCase() === name);
}

/**
 * `+` is a space; `%XX` escapes must form UTF-8. Undefined when they do not: decodeURIComponent
 * refuses a malformed escape and any byte sequence that is not UTF-8 (overlong forms, surrogates,
 * code points past U+10FFFF, truncated sequences) with a URIError, in one pass over the text.
 */
export function formDecode(text: string): string | undefined {
  const plain = text.replaceAll('+', ' ');
  if (!plain.includes('%')) return plain;
  try {
    return decodeURIComponent(plain);
  } catch {
    return undefined;
  }
}

/** Only the `id` left out. */
const ID_ONLY: OriginChanges = { query: undefined, withoutPersistedQuery: false, withoutId: true };

/** Undefined where the body stays as it came: it is not one JSON object, or only an `id` it lacks is left out. */
function rewrittenBody(body: Buffer, changes: OriginChanges): Buffer | undefined {
  const json = readJsonBytes(body);
  // Only bodies read as one JSON object are ever rewritten; anything else is sent as it came.
  if (typeof json === 'string' || json.kind !== 'object') return undefined;
  const members = json.members ?? new Map<string, JsonValue>();
  const changesMembers = changes.query !== undefined || (changes.withoutPersistedQuery && members.has('extensions')) || (changes.withoutId && members.has(ID_MEMBER));
  return changesMembers ? Buffer.from(objectText(members, changes)) : undefined;
}

function objectText(members: ReadonlyMap<string, JsonValue>, changes: OriginChanges): string {
  const texts: string[] = [];
  let querySet = changes.query === undefined;
  for (const [name, value] of members) {
    if (name === ID_MEMBER && changes.withoutId) continue;
    if (name === 'query' && changes.query !== undefined) {
      texts.push(`"query":${JSON.stringify(changes.query)}`);
      querySet = true;
    } else if (name === 'extensions' && changes.withoutPersistedQuery) {
      const kept = extensionsWithoutPersistedQuery(value);
      if (kept !== undefined) texts.push(`"extensions":${kept}`);
    } else {
      texts.push(`${JSON.stringify(name)}:${value.raw}`);
    }
  }
  if (!querySet) texts.push(`"query":${JSON.stringify(changes.query)}`);
  return `{${texts.join(',')}}`;
}

/**
 * `extensions` without its `persistedQuery` member, each other member's text as sent (the origin
 * runs what svc-cache keyed: `1.0` stays `1.0`, an object's members keep their order); undefined
 * when nothing is left. A value that is no object is left as sent.
 */
function extensionsWithoutPersistedQuery(extensions: JsonValue): string | undefined {
  if (extensions.kind !== 'object') return extensions.raw;
  const kept = [...(extensions.members ?? new Map<string, JsonValue>())].filter(([name]) => name !== 'persistedQuery');
  return kept.length === 0 ? undefined : `{${kept.map(([name, value]) => `${JSON.stringify(name)}:${value.raw}`).join(',')}}`;
}

function rewrittenPath(path: string, changes: OriginChanges): string {
  const queryStart = path.indexOf('?');
  const pathOnly = queryStart < 0 ? path : path.slice(0, queryStart);
  const replaced = [...(changes.query === undefined ? [] : ['query']), ...(changes.withoutPersistedQuery ? ['extensions'] : [])];
  const pairs = queryStart < 0 ? [] : path.slice(queryStart + 1).split('&');
  const kept = pairs.filter((pair) => {
    if (pair === '') return false;
    const name = parameterName(pair);
    return !replaced.includes(name ?? '') && !(changes.withoutId && isIdParameterName(name));
  });
  const added = changes.query === undefined ? [] : [`query=${encodeURIComponent(changes.query)}`];
  const extensions = changes.withoutPersistedQuery ? urlExtensionsWithoutPersistedQuery(pairs) : undefined;
  if (extensions !== undefined) added.push(`extensions=${encodeURIComponent(extensions)}`);
  const query = [...kept, ...added];
  return query.length === 0 ? pathOnly : `${pathOnly}?${query.join('&')}`;
}

/** The first `extensions` URL parameter without its `persistedQuery` (extensionsWithoutPersistedQuery); repeats agree (requestParameters.ts). */
function urlExtensionsWithoutPersistedQuery(pairs: readonly string[]): string | undefined {
  const pair = pairs.find((candidate) => parameterName(candidate) === 'extensions');
  const separator = pair?.indexOf('=') ?? -1;
  const text = pair === undefined || separator < 0 ? undefined : formDecode(pair.slice(separator + 1));
  const json = text === undefined ? undefined : readJson(text);
  return json === undefined || typeof json === 'string' ? undefined : extensionsWithoutPersistedQuery(json);
}

function hasIdParameter(path: string): boolean {
  const queryStart = path.indexOf('?');
  return queryStart >= 0 && hasUrlParameter(path.slice(queryStart + 1), ID_MEMBER);
}

/** The decoded name of a URL pair, undefined when it does not decode (then it is no GraphQL parameter). */
function parameterName(pair: string): string | undefined {
  const separator = pair.indexOf('=');
  return formDecode(separator < 0 ? pair : pair.slice(0, separator));
}
