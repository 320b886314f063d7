import { createPublicKey } from 'node:crypto';
import { isKeyedRequestHeader } from '../http/index.js';
import { z } from 'zod';
import type { PersistedDocuments } from '../persistedDocuments/index.js';
import { parseRedisNode, parseRedisUrl, type RedisNodeProblem, type RedisUrlProblem } from './redisAddress.js';
import { redisSectionIssues } from './redisSection.js';
import { scopeReferenceIssues } from './scopeReferences.js';

/**
 * The configuration file (README "Configuration", "Every key"). `.strict()` everywhere: an unknown key is a typo the operator
 * wants to hear about at start, not a setting silently ignored. Error messages are worked out from
 * these definitions (src/config/issues.ts): `.describe()` names what a value must be where the
 * types alone would read poorly, and `.meta({ secret })` keeps a value out of messages and off the
 * dashboard (src/config/issues.ts, Secrecy).
 */

/** A header name is an RFC 9110 token; a name with other characters matches no request. */
const TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";

const SCOPE_SOURCE = new RegExp(`^(header|cookie):${TOKEN}$`);

const headerName = z
  .string()
  .regex(new RegExp(`^${TOKEN}$`), "expected a header name: letters, digits and !#$%&'*+-.^_`|~ (an RFC 9110 token)");

/**
 * Node's timers hold at most 2^31 - 1 ms and fire at once (1 ms) past it: a longer Redis timeout
 * then failed every command, a longer acknowledgement wait every purge (an outside audit).
 */
const MAX_TIMER_MS = 2_147_483_647;
const milliseconds = z.number().int().max(MAX_TIMER_MS);

/**
 * Ten years. Redis's scripts take an entry's lifetime in ms as a Lua number, which prints as an
 * exponent (`1e+17`) past 10^14 and is refused then: every store failed (an outside audit).
 */
const MAX_SECONDS = 315_360_000;
const seconds = z.number().int().min(0).max(MAX_SECONDS);

/**
 * Headers requests carry for what they mean to the origin: svc-cache removes the purge token's
 * header from every request it forwards, so `purge.header: authorization` signed every user out at
 * the origin (an outside audit). Those the key holds are refused too (isKeyedRequestHeader), and a
 * scope's own headers and the bypass headers (purgeHeaderIssues).
 */
const HEADERS_REQUESTS_NEED = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'apollographql-client-name',
  'apollographql-client-version',
  'authorization',
  'b3',
  'baggage',
  'cache-control',
  'connection',
  'content-encoding',
  'content-length',
  'content-type',
  'cf-connecting-ip',
  'cookie',
  'graphql-preflight',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-unmodified-since',
  'pragma',
  'proxy-authorization',
  'referer',
  'svc-debug',
  'te',
  'traceparent',
  'tracestate',
  'transfer-encoding',
  'true-client-ip',
  'upgrade',
  'user-agent',
  'x-api-key',
  'x-apollo-tracing',
  'x-csrf-token',
  'x-forwarded-client-cert',
  'x-forwarded-for',
  'x-http-method-override',
  'x-real-ip',
  'x-request-id',
  'x-requested-with',
  'x-xsrf-token',
]);

const SCOPE_DEFINITION = '"header:NAME", "cookie:NAME" or several joined with "|", e.g. "header:x-team|cookie:team"';

const scopeDefinition = z
  .string()
  .refine((value) => value.split('|').every((part) => SCOPE_SOURCE.test(part.trim())), `expected ${SCOPE_DEFINITION}`)
  .describe(SCOPE_DEFINITION);

/** The signature algorithms a JWT scope may accept; `none` is not one of them. */
export const JWT_ALGORITHMS = ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

const JWT_KEY_SOURCES = ['secret', 'publicKey', 'jwksFile', 'jwksUrl'] as const;

/**
 * A scope keyed on one claim of a verified JWT (README, Scopes): the token is read from the one
 * source of `definition`, verified with exactly one key source, and only then its claim keys the bucket.
 */
const jwtSettings = z
  .object({
    claim: z.string().regex(/^[^.]+(\.[^.]+)*$/, 'expected a claim name or a dotted path, e.g. "sub" or "org.id"'),
    algorithms: z
      .array(z.enum(JWT_ALGORITHMS))
      .min(1)
      .describe(`a non-empty list of ${JWT_ALGORITHMS.join(', ')} ("none" is never accepted)`),
    secret: z.string().min(1).meta({ secret: 'value' }).optional(),
    publicKey: z
      .string()
      .refine(isPublicKey, 'expected a PEM public key ("-----BEGIN PUBLIC KEY-----...")')
      .meta({ secret: 'value' })
      .optional(),
    jwksFile: z.string().min(1).optional(),
    jwksUrl: z.url({ protocol: /^https?$/ }).describe('an http:// or https:// URL').optional(),
    issuer: z.string().min(1).optional(),
    audience: z.string().min(1).optional(),
    clockToleranceSeconds: z.number().int().min(0).default(0),
  })
  .strict()
  .superRefine((jwt, ctx) => {
    const sources = JWT_KEY_SOURCES.filter((key) => jwt[key] !== undefined);
    if (sources.length !== 1) {
      ctx.addIssue({ code: 'custom', path: [], message: `expected exactly one of ${JWT_KEY_SOURCES.join(', ')} (found ${sources.length})` });
      return;
    }
    // An HMAC secret with an asymmetric algorithm, or the reverse, is the classic algorithm confusion.
    const hmac = jwt.algorithms.filter((algorithm) => algorithm.startsWith('HS'));
    if (sources[0] === 'secret' && hmac.length !== jwt.algorithms.length) {
      ctx.addIssue({ code: 'custom', path: ['algorithms'], message: 'a secret verifies only HS256, HS384 and HS512' });
    }
    if (sources[0] !== 'secret' && hmac.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['algorithms'], message: `HS256, HS384 and HS512 need a secret, not ${sources[0]}` });
    }
  });

const jwtScope = z
  .object({
    definition: z
      .string()
      .refine((value) => SCOPE_SOURCE.test(value.trim()), 'expected one "header:NAME" or "cookie:NAME": where the token is')
      .describe('one "header:NAME" or "cookie:NAME"'),
    jwt: jwtSettings,
  })
  .strict();

function isPublicKey(pem: string): boolean {
  try {
    return createPublicKey(pem).type === 'public';
  } catch {
    return false;
  }
}

const scopeName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected letters, digits and "_", not starting with a digit');

const NAME = '[_A-Za-z][_0-9A-Za-z]*';
const LIST_ARGUMENT = new RegExp(`^${NAME}\\.${NAME}\\.${NAME}$`);
const OBJECT_FIELD = new RegExp(`^${NAME}\\.${NAME}$`);

const fieldNames = z.array(z.string().min(1)).describe('a list of field names');

/** An empty field list stands for the whole type. */
const typeSelection = z
  .union([
    z.array(z.string().min(1)).min(1).describe('a non-empty list of type names'),
    z.record(z.string().min(1), fieldNames),
  ])
  .describe('a list of type names, or a mapping of type name to a list of its field names');

const rule = z
  .object({
    description: z.string().optional(),
    types: typeSelection,
    maxAge: seconds,
    swr: seconds.default(0),
    staleIfError: seconds.default(0),
    scope: z.string().min(1).optional(),
  })
  .strict();

/** The local cache's bound when `redis.localCache.maxBytes` is not set: 64 MiB. */
export const LOCAL_CACHE_DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

const COMPRESSION_DEFAULTS = { encoding: 'gzip', minBytes: 256 } as const;

/** gzip levels are 1-9 (0 stores uncompressed inside gzip framing), brotli qualities 0-11. */
const compressionSchema = z
  .object({
    encoding: z.enum(['gzip', 'br', 'identity']).default(COMPRESSION_DEFAULTS.encoding),
    level: z.number().int().min(0).max(11).optional(),
    minBytes: z.number().int().min(0).default(COMPRESSION_DEFAULTS.minBytes),
  })
  .strict()
  .refine((compression) => compression.encoding !== 'gzip' || compression.level === undefined || (compression.level >= 1 && compression.level <= 9), {
    path: ['level'],
    message: 'gzip levels are 1 to 9',
  })
  .default(COMPRESSION_DEFAULTS);

/**
 * What an endpoint must be to ever match: a request's path is compared with it exactly, its query
 * string dropped (README, Every key; src/http/requestTarget.ts), so an endpoint holding a query, a
 * fragment or characters no request path carries would never match. The first failed test is reported.
 */
const ENDPOINT_TESTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\//, 'expected a path starting with "/"'],
  [/^[^?#]*$/, 'expected a path without a query string or fragment ("?", "#"): requests are matched on their path alone'],
  [/^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/, "expected a path of URL characters: letters, digits, -._~!$&'()*+,;=:@/ and %XX escapes"],
];

function firstFailedTest(tests: ReadonlyArray<readonly [RegExp, string]>) {
  return (value: string, ctx: z.RefinementCtx<string>): void => {
    const failed = tests.find(([test]) => !test.test(value));
    if (failed) ctx.addIssue({ code: 'custom', message: failed[1] });
  };
}

/**
 * Every URL the store would refuse to connect to is refused here (src/config/redisAddress.ts). The
 * URL may hold a password, so messages quote it without one (src/config/issues.ts), or not at all.
 */
const REDIS_URL_EXPECTATIONS: Record<RedisUrlProblem, string> = {
  'not-a-redis-url': 'expected a redis:// or rediss:// URL such as redis://host:6379',
  'malformed-url': 'expected a URL of the form redis[s]://[[user]:password@]host[:port][/db], with the password URL-encoded',
  'bad-port': 'expected a redis:// or rediss:// URL with a port from 1 to 65535',
  'database-not-a-number': 'expected a redis:// or rediss:// URL whose path is a database number (redis://host:6379/0)',
  'url-options': 'expected a redis:// or rediss:// URL without "?" or "#": svc-cache reads no options from it (in a password, write them %3F and %23)',
};

const redisUrl = z.string().superRefine((url, ctx) => {
  const endpoint = parseRedisUrl(url);
  if (typeof endpoint === 'string') ctx.addIssue({ code: 'custom', message: REDIS_URL_EXPECTATIONS[endpoint] });
});

const REDIS_NODE_EXPECTATIONS: Record<RedisNodeProblem, string> = {
  'not-host-and-port': 'expected "host:port" or a redis:// URL',
  'malformed-url': 'expected "host:port" or a URL of the form redis[s]://[[user]:password@]host[:port], with the password URL-encoded',
  'bad-port': 'expected "host:port" or a redis:// URL with a port from 1 to 65535',
  'database-not-a-number': 'expected "host:port" or a redis:// URL whose path is a database number (redis://host:6379/0)',
  'url-options': 'expected "host:port" or a redis:// URL without "?" or "#": svc-cache reads no options from it',
};

const redisNode = z
  .string()
  .min(1)
  .superRefine((address, ctx) => {
    const node = parseRedisNode(address);
    if (typeof node === 'string') ctx.addIssue({ code: 'custom', message: REDIS_NODE_EXPECTATIONS[node] });
  });

export const configSchema = z
  .object({
    origin: z
      .object({
        url: z
          .url({ protocol: /^https?$/ })
          // Introspection (fetch) refuses a URL with credentials, so the schema would never load.
          .refine((url) => !/^[a-z]+:\/\/[^/?#]*@/i.test(url), 'expected an http:// or https:// URL without a user or password (svc-cache cannot send them)')
          .describe('an http:// or https:// URL'),
      })
      .strict(),
    schema: z
      .object({
        file: z.string().min(1).optional(),
        /** How often an introspected schema is fetched again, to follow the origin's deploys; 0 never (README, Every key). */
        // Node's timers take at most 2^31 - 1 ms (24.8 days), and run at once past it.
        refreshSeconds: z.number().int().min(0).max(2_147_483).optional().describe('a whole number of seconds up to 2147483, 0 for never'),
      })
      .strict()
      .optional(),
    /** Request paths svc-cache interprets as GraphQL; every other path passes untouched (README, "Every key"). */
    endpoints: z
      .array(z.string().superRefine(firstFailedTest(ENDPOINT_TESTS)))
      .min(1)
      .describe('a non-empty list of paths, e.g. ["/graphql"]')
      .default(['/graphql']),
    /**
     * The ext_proc port's TLS, for an Envoy outside the pod: the server's certificate and key, and
     * the CA whose client certificates are accepted (every other peer is refused). File paths.
     */
    grpc: z
      .object({
        tls: z
          .object({ cert: z.string().min(1), key: z.string().min(1), clientCa: z.string().min(1) })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    redis: z
      .object({
        url: redisUrl.meta({ secret: 'url-password' }).optional(),
        keyPrefix: z.string().default('svc-cache:'),
        cluster: z.object({ nodes: z.array(redisNode).min(1) }).strict().optional(),
        sentinel: z
          .object({ name: z.string().min(1), sentinels: z.array(redisNode).min(1) })
          .strict()
          .optional(),
        /** At most a minute: requests wait on it, and `ackTimeoutMs` defaults to twice it, a timer. */
        commandTimeoutMs: z.number().int().positive().max(60_000).default(250),
        /**
         * The replica-local cache in front of Redis (README, Redis: the replica-local cache). `enabled` defaults
         * to true for a standalone or Sentinel Redis and false with `cluster`, where it is refused;
         * `ackTimeoutMs` defaults to twice `commandTimeoutMs`.
         */
        localCache: z
          .object({
            enabled: z.boolean().optional(),
            maxBytes: z.number().int().positive().default(LOCAL_CACHE_DEFAULT_MAX_BYTES),
            ackTimeoutMs: milliseconds.positive().optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    scopes: z
      .record(scopeName, z.union([scopeDefinition, jwtScope]))
      .describe('a mapping of scope name to "header:NAME", "cookie:NAME", several joined with "|", or { definition, jwt }')
      .default({}),
    rules: z.array(rule).default([]),
    keyFields: z
      .object({
        defaults: fieldNames.default(['id', '_id']),
        types: z
          .record(z.string().min(1), z.array(z.string().min(1)).min(1).describe('a non-empty list of field names'))
          .default({}),
      })
      .strict()
      .default({ defaults: ['id', '_id'], types: {} }),
    mutationPolicy: z.enum(['None', 'Entity', 'List', 'Type']).default('Entity'),
    /** Which lists `mutationPolicy: List` invalidates (README, Invalidation after mutations). */
    listArguments: z
      .object({
        mode: z.enum(['match', 'any']).default('match'),
        fields: z
          .record(
            z.string().regex(LIST_ARGUMENT, 'expected Type.field.argument, e.g. Query.usersByTeam.team'),
            z
              .string()
              .regex(OBJECT_FIELD, 'expected Type.field, e.g. User.teamId, or null')
              .nullable()
              .describe('Type.field, e.g. User.teamId, or null'),
          )
          .describe('a mapping of Type.field.argument to Type.field or null')
          .default({}),
      })
      .strict()
      .default({ mode: 'match', fields: {} }),
    purge: z
      .object({
        tokens: z.array(z.string().min(1).meta({ secret: 'value' })).default([]),
        header: headerName
          .refine(
            (name) => !HEADERS_REQUESTS_NEED.has(name.toLowerCase()) && !isKeyedRequestHeader(name.toLowerCase()),
            'a header requests carry for the origin: svc-cache removes the purge token header from every request it forwards; name one of its own, e.g. svc-purge-token',
          )
          .default('svc-purge-token'),
      })
      .strict()
      .default({ tokens: [], header: 'svc-purge-token' }),
    apq: z
      .object({
        enabled: z.boolean().default(true),
        ttl: z.number().int().positive().max(MAX_SECONDS).default(86400),
        /** Keep `extensions.persistedQuery` on requests to the origin (for an origin with APQ of its own). */
        forwardPersistedQuery: z.boolean().default(false),
        /** Bound on the registry's hashes and query texts; the oldest registrations go first. */
        maxBytes: z.number().int().positive().default(16 * 1024 * 1024),
      })
      .strict()
      .default({ enabled: true, ttl: 86400, forwardPersistedQuery: false, maxBytes: 16 * 1024 * 1024 }),
    /** The origin's manifest of stored documents, which requests name by id (README, Stored documents sent by id). */
    persistedDocuments: z.object({ manifest: z.string().min(1) }).strict().optional(),
    limits: z
      .object({
        /** Envoy's own buffer limit should match (per_connection_buffer_limit_bytes). */
        maxRequestBodyBytes: z.number().int().positive().default(1024 * 1024),
        maxResponseBodyBytes: z.number().int().positive().default(10 * 1000 * 1000),
        maxQueryBytes: z.number().int().positive().default(100 * 1024),
        /**
         * At most 200: brackets may nest four times this and four more (src/graphql/limits.ts), and
         * graphql-js's parser overflows the stack from about 1,500 (a review).
         */
        maxDepth: z.number().int().positive().max(200).default(25),
        maxAliases: z.number().int().positive().default(50),
      })
      .strict()
      .default({
        maxRequestBodyBytes: 1024 * 1024,
        maxResponseBodyBytes: 10 * 1000 * 1000,
        maxQueryBytes: 100 * 1024,
        maxDepth: 25,
        maxAliases: 50,
      }),
    cache: z
      .object({
        /** In-memory store bound, in bytes (used when no redis.url is set). */
        memoryMaxBytes: z.number().int().positive().default(256 * 1024 * 1024),
        /** Opt-in to serving requests with `authorization`/`cookie` from PUBLIC (RFC 9111 section 3.5). */
        publicForCredentialedRequests: z.boolean().default(false),
        /** Origin max-age / s-maxage normally shortens the rule's TTL; this turns that off. */
        ignoreOriginCacheControl: z.boolean().default(false),
        /**
         * Request headers that make a request skip the cache (off by default: any client could use
         * them). Lower-cased here, once: names are case-insensitive, and a request's are lower-cased
         * as the ext_proc layer reads them.
         */
        bypassCacheHeaders: z.array(headerName.transform((name) => name.toLowerCase())).default([]),
        /**
         * Key of the hash that names scope buckets. Replicas sharing one store need the same secret to
         * share scoped entries; without it each process picks a random one.
         */
        scopeKeySecret: z.string().min(16).meta({ secret: 'value' }).optional(),
        /**
         * How long identical misses wait for the one request already fetching their answer, in ms.
         * Kept under Envoy's ext_proc message_timeout (1 s in deploy/sidecar/envoy.yaml); 0 turns coalescing off.
         */
        coalesceWaitMs: milliseconds.min(0).default(800),
        /** How stored bodies are compressed (README, "Every key"; src/store/bodyEncoding.ts). */
        compression: compressionSchema,
      })
      .strict()
      .default({
        memoryMaxBytes: 256 * 1024 * 1024,
        publicForCredentialedRequests: false,
        ignoreOriginCacheControl: false,
        bypassCacheHeaders: [],
        coalesceWaitMs: 800,
        compression: COMPRESSION_DEFAULTS,
      }),
    dashboard: z
      .object({
        enabled: z.boolean().default(true),
        /** Host names the page and its API answer besides the admin port's own (README, Dashboard). */
        allowedHosts: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .default({ enabled: true, allowedHosts: [] }),
    logging: z
      .object({ level: z.enum(['debug', 'info', 'warn', 'error']).default('info') })
      .strict()
      .default({ level: 'info' }),
  })
  .strict()
  .superRefine((config, ctx) => {
    for (const issue of [...scopeReferenceIssues(config), ...redisSectionIssues(config)]) ctx.addIssue({ code: 'custom', ...issue });
  });

export type Config = Omit<z.infer<typeof configSchema>, 'persistedDocuments'> & {
  /**
   * `documents`: the manifest's, once loadConfig read it (parseConfig reads no file, and leaves it
   * out: no document is then known by its id).
   */
  persistedDocuments?: { manifest: string; documents?: PersistedDocuments };
};
export type CacheRule = Config['rules'][number];
/** A scope as configured: the string form, or a source whose verified JWT's claim keys the bucket. */
export type ScopeConfig = Config['scopes'][string];
export type JwtScopeSettings = z.infer<typeof jwtSettings>;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];
/** Invalidation policy after a mutation (docs/graphql-caching.md, Invalidation). */
export type MutationPolicy = Config['mutationPolicy'];
/** Which lists `mutationPolicy: List` invalidates (docs/graphql-caching.md, Invalidation). */
export type ListArguments = Config['listArguments'];

/** What a file or a caller may write: defaulted settings are optional here. */
export type ConfigInput = z.input<typeof configSchema>;
