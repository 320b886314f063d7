/**
 * Where a Redis is, as `redis.url`, `redis.cluster.nodes` and `redis.sentinel.sentinels` write it
 * (README, Every key). One parser serves the schema, which refuses an address that cannot be used
 * so that `check`, `serve` and a reload report it alike under its key, and the store, which
 * connects to what it returns.
 */

export interface RedisEndpoint {
  host: string;
  port: number;
  username: string | undefined;
  password: string | undefined;
  db: number;
  tls: boolean;
}

/** A Cluster seed node or a Sentinel. */
export interface RedisNodeAddress {
  host: string;
  port: number;
}

/** Why a `redis.url` cannot be used. */
export type RedisUrlProblem = 'not-a-redis-url' | UrlProblem;

/** Why a node address (`host:port` or a redis:// URL) cannot be used. */
export type RedisNodeProblem = 'not-host-and-port' | UrlProblem;

type UrlProblem = 'malformed-url' | 'bad-port' | 'database-not-a-number' | 'url-options';

/** `redis[s]://[[user]:password@]host[:port][/db]`: port 6379 and database 0 by default. */
export function parseRedisUrl(url: string): RedisEndpoint | RedisUrlProblem {
  return REDIS_SCHEME.test(url) ? endpointOf(url) : 'not-a-redis-url';
}

/** `host:port` (port 6379 by default, an IPv6 host in brackets) or a redis:// URL. */
export function parseRedisNode(address: string): RedisNodeAddress | RedisNodeProblem {
  if (REDIS_SCHEME.test(address)) return nodeOf(endpointOf(address));
  // Anything a URL would read as credentials, a path or options is no part of `host:port`.
  if (/[@/?#]/.test(address)) return 'not-host-and-port';
  const node = nodeOf(endpointOf(`redis://${address}`));
  return node === 'malformed-url' ? 'not-host-and-port' : node;
}

const REDIS_SCHEME = /^rediss?:\/\//;
const DEFAULT_PORT = 6379;
const MAX_PORT = 65535;

function endpointOf(url: string): RedisEndpoint | UrlProblem {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return hasBadPort(url) ? 'bad-port' : 'malformed-url';
  }
  // svc-cache reads no options from the URL, and an unencoded "?" or "#" in a password cuts it short.
  if (parsed.search !== '' || parsed.hash !== '') return 'url-options';
  if (parsed.port === '0') return 'bad-port';
  const database = parsed.pathname.replace(/^\//, '');
  if (database !== '' && !/^\d+$/.test(database)) return 'database-not-a-number';
  const username = decoded(parsed.username);
  const password = decoded(parsed.password);
  // The URL parser leaves a bad escape (`%zz`) in place: decoding it would throw.
  if (username === null || password === null) return 'malformed-url';
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, '') || 'localhost',
    port: parsed.port === '' ? DEFAULT_PORT : Number(parsed.port),
    username,
    password,
    db: database === '' ? 0 : Number(database),
    tls: parsed.protocol === 'rediss:',
  };
}

/** A percent-encoded URL part decoded; undefined when empty, null when an escape is not UTF-8. */
function decoded(part: string): string | undefined | null {
  if (part === '') return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

function nodeOf(endpoint: RedisEndpoint | UrlProblem): RedisNodeAddress | UrlProblem {
  return typeof endpoint === 'string' ? endpoint : { host: endpoint.host, port: endpoint.port };
}

/**
 * Whether a URL that does not parse names a port outside 1-65535 (`host:99999`, `host:abc`), the
 * usual mistake, told apart for a clearer message. The port follows the last ":" after the
 * credentials and any IPv6 literal.
 */
function hasBadPort(url: string): boolean {
  const authority = url.replace(REDIS_SCHEME, '').split(/[/?#]/, 1)[0] ?? '';
  const hostAndPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /^(?:\[[^\]]*\]|[^:[\]]*):(.*)$/.exec(hostAndPort)?.[1];
  return port !== undefined && port !== '' && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= MAX_PORT);
}
