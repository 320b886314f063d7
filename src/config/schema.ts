import { z } from 'zod';

/**
 * The configuration file of DESIGN.md. `.strict()` everywhere: an unknown key is a typo the operator
 * wants to hear about at start, not a setting silently ignored.
 */

const SCOPE_SOURCE = /^(header|cookie):[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

const scopeDefinition = z
  .string()
  .refine(
    (value) => value.split('|').every((part) => SCOPE_SOURCE.test(part.trim())),
    'expected "header:NAME", "cookie:NAME" or several joined with "|", e.g. "header:x-team|cookie:team"',
  );

const typeSelection = z.union([
  z.array(z.string().min(1)).min(1),
  z.record(z.string().min(1), z.array(z.string().min(1))),
]);

const rule = z
  .object({
    description: z.string().optional(),
    types: typeSelection,
    maxAge: z.number().int().min(0),
    swr: z.number().int().min(0).default(0),
    scope: z.string().min(1).optional(),
  })
  .strict();

export const configSchema = z
  .object({
    origin: z.object({ url: z.url() }).strict(),
    schema: z.object({ file: z.string().min(1).optional() }).strict().optional(),
    redis: z
      .object({
        url: z.string().regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL').optional(),
        keyPrefix: z.string().default('svc-cache:'),
        cluster: z.object({ nodes: z.array(z.string().min(1)).min(1) }).strict().optional(),
        sentinel: z
          .object({ name: z.string().min(1), sentinels: z.array(z.string().min(1)).min(1) })
          .strict()
          .optional(),
        commandTimeoutMs: z.number().int().positive().default(250),
      })
      .strict()
      .optional(),
    scopes: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), scopeDefinition).default({}),
    rules: z.array(rule).default([]),
    keyFields: z
      .object({
        defaults: z.array(z.string().min(1)).default(['id', '_id']),
        types: z.record(z.string().min(1), z.array(z.string().min(1)).min(1)).default({}),
      })
      .strict()
      .default({ defaults: ['id', '_id'], types: {} }),
    mutationPolicy: z.enum(['None', 'Entity', 'List', 'Type']).default('Entity'),
    purge: z
      .object({
        tokens: z.array(z.string().min(1)).default([]),
        header: z.string().min(1).default('svc-purge-token'),
      })
      .strict()
      .default({ tokens: [], header: 'svc-purge-token' }),
    apq: z
      .object({
        enabled: z.boolean().default(true),
        ttl: z.number().int().positive().default(86400),
      })
      .strict()
      .default({ enabled: true, ttl: 86400 }),
    limits: z
      .object({
        /** Envoy's own buffer limit should match (per_connection_buffer_limit_bytes). */
        maxRequestBodyBytes: z.number().int().positive().default(1024 * 1024),
        maxResponseBodyBytes: z.number().int().positive().default(10 * 1000 * 1000),
        maxQueryBytes: z.number().int().positive().default(100 * 1024),
        maxDepth: z.number().int().positive().default(25),
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
        /** Request headers that make a request skip the cache (off by default: any client could use them). */
        bypassCacheHeaders: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .default({
        memoryMaxBytes: 256 * 1024 * 1024,
        publicForCredentialedRequests: false,
        ignoreOriginCacheControl: false,
        bypassCacheHeaders: [],
      }),
    logging: z
      .object({ level: z.enum(['debug', 'info', 'warn', 'error']).default('info') })
      .strict()
      .default({ level: 'info' }),
  })
  .strict()
  .superRefine((config, ctx) => {
    config.rules.forEach((r, index) => {
      if (r.scope !== undefined && r.scope !== 'PUBLIC' && !(r.scope in config.scopes)) {
        ctx.addIssue({
          code: 'custom',
          path: ['rules', index, 'scope'],
          message: `unknown scope "${r.scope}": expected PUBLIC or one of the names under "scopes"`,
        });
      }
    });
    if ('PUBLIC' in config.scopes) {
      ctx.addIssue({ code: 'custom', path: ['scopes', 'PUBLIC'], message: 'PUBLIC is built in and cannot be redefined' });
    }
  });

export type Config = z.infer<typeof configSchema>;
export type CacheRule = Config['rules'][number];
