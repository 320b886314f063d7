import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, configSchema, demoConfig, demoConfigFrom, loadConfig, parseConfig } from '../../src/config/index.js';

const ORIGIN = 'origin:\n  url: http://origin.test/graphql\n';

function parse(text: string, env: NodeJS.ProcessEnv = {}) {
  return parseConfig(text, { source: 'config.yaml', env, baseDir: '/etc/svc-cache' });
}

/** The lines of the ConfigError that parsing `text` throws. */
function problems(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parse(text, env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    expect(configError.message).toBe(configError.problems.join('\n'));
    return [...configError.problems];
  }
  throw new Error('expected the configuration to be refused');
}

describe('parseConfig: a valid file', () => {
  it('reads a full example configuration, with every default filled in', () => {
    const config = parse(
      `${ORIGIN}schema:
  file: ./schema.graphql
redis:
  url: redis://localhost:6379
  keyPrefix: "svc-cache:"
scopes:
  AUTHENTICATED: header:authorization
  SESSION: cookie:session
  TEAM: header:x-team|cookie:team
rules:
  - description: Cache all queries for 15 minutes
    types: [Query]
    maxAge: 900
    swr: 900
  - description: Per-user data
    types: { Query: [me], User: [email] }
    maxAge: 60
    scope: AUTHENTICATED
keyFields:
  defaults: [id, _id]
  types: { Product: [sku] }
mutationPolicy: Entity
purge:
  tokens: ["\${SVC_PURGE_TOKEN}"]
  header: svc-purge-token
apq:
  enabled: true
  ttl: 86400
`,
      { SVC_PURGE_TOKEN: 's3cret' },
    );
    expect(config).toEqual({
      origin: { url: 'http://origin.test/graphql' },
      schema: { file: '/etc/svc-cache/schema.graphql' },
      endpoints: ['/graphql'],
      redis: { url: 'redis://localhost:6379', keyPrefix: 'svc-cache:', commandTimeoutMs: 250 },
      scopes: { AUTHENTICATED: 'header:authorization', SESSION: 'cookie:session', TEAM: 'header:x-team|cookie:team' },
      rules: [
        { description: 'Cache all queries for 15 minutes', types: ['Query'], maxAge: 900, swr: 900, staleIfError: 0 },
        { description: 'Per-user data', types: { Query: ['me'], User: ['email'] }, maxAge: 60, swr: 0, staleIfError: 0, scope: 'AUTHENTICATED' },
      ],
      keyFields: { defaults: ['id', '_id'], types: { Product: ['sku'] } },
      mutationPolicy: 'Entity',
      listArguments: { mode: 'match', fields: {} },
      purge: { tokens: ['s3cret'], header: 'svc-purge-token' },
      apq: { enabled: true, ttl: 86400, forwardPersistedQuery: false, maxBytes: 16 * 1024 * 1024 },
      limits: {
        maxRequestBodyBytes: 1048576,
        maxResponseBodyBytes: 10000000,
        maxQueryBytes: 102400,
        maxDepth: 25,
        maxAliases: 50,
      },
      cache: {
        memoryMaxBytes: 268435456,
        publicForCredentialedRequests: false,
        ignoreOriginCacheControl: false,
        bypassCacheHeaders: [],
        coalesceWaitMs: 800,
        compression: { encoding: 'gzip', minBytes: 256 },
      },
      dashboard: { enabled: true, allowedHosts: [] },
      logging: { level: 'info' },
    });
  });

  it('fills in defaults when only the origin is given', () => {
    const config = parse(ORIGIN);
    expect(config.schema).toBeUndefined();
    expect(config.redis).toBeUndefined();
    expect(config.scopes).toEqual({});
    expect(config.rules).toEqual([]);
    expect(config.keyFields).toEqual({ defaults: ['id', '_id'], types: {} });
    expect(config.mutationPolicy).toBe('Entity');
    expect(config.purge).toEqual({ tokens: [], header: 'svc-purge-token' });
    expect(config.apq).toEqual({ enabled: true, ttl: 86400, forwardPersistedQuery: false, maxBytes: 16 * 1024 * 1024 });
    expect(config.limits.maxDepth).toBe(25);
    expect(config.logging.level).toBe('info');
  });

  it('treats a key with an empty value as absent, so a section with everything commented out takes its defaults', () => {
    const config = parse(`${ORIGIN}redis:\n  # url: redis://localhost:6379\napq:\nrules:\n  - types: [Query]\n    maxAge: 5\n    description:\n`);
    expect(config.redis).toBeUndefined();
    expect(config.apq).toEqual({ enabled: true, ttl: 86400, forwardPersistedQuery: false, maxBytes: 16 * 1024 * 1024 });
    expect(config.rules).toEqual([{ types: ['Query'], maxAge: 5, swr: 0, staleIfError: 0 }]);
  });

  it('accepts anchors and merge keys', () => {
    const config = parse(`${ORIGIN}rules:\n  - &base\n    types: [Query]\n    maxAge: 60\n  - <<: *base\n    scope: PUBLIC\n`);
    expect(config.rules[1]).toEqual({ types: ['Query'], maxAge: 60, swr: 0, staleIfError: 0, scope: 'PUBLIC' });
  });

  it('resolves a relative schema.file against baseDir, and by default against the directory of the source', () => {
    expect(parse(`${ORIGIN}schema:\n  file: schemas/origin.graphql\n`).schema?.file).toBe('/etc/svc-cache/schemas/origin.graphql');
    expect(parse(`${ORIGIN}schema:\n  file: /abs/origin.graphql\n`).schema?.file).toBe('/abs/origin.graphql');
    const bySource = parseConfig(`${ORIGIN}schema:\n  file: ../origin.graphql\n`, { source: '/srv/app/conf/config.yaml', env: {} });
    expect(bySource.schema?.file).toBe('/srv/app/origin.graphql');
  });

  it('takes schema.refreshSeconds up to what a Node timer can wait (24.8 days)', () => {
    expect(parse(`${ORIGIN}schema:\n  refreshSeconds: 2147483\n`).schema?.refreshSeconds).toBe(2_147_483);
    expect(() => parse(`${ORIGIN}schema:\n  refreshSeconds: 2592000\n`)).toThrow('config.yaml: schema.refreshSeconds:');
  });
});

describe('parseConfig: ${ENV_VAR} substitution', () => {
  it('replaces references in string values, inside longer strings too', () => {
    const config = parse('origin:\n  url: http://${ORIGIN_HOST}:4000/graphql\nredis:\n  url: ${REDIS_URL}\n', {
      ORIGIN_HOST: 'api.internal',
      REDIS_URL: 'rediss://:p%40ss%23w%3Ard@redis:6380',
    });
    expect(config.origin.url).toBe('http://api.internal:4000/graphql');
    expect(config.redis?.url).toBe('rediss://:p%40ss%23w%3Ard@redis:6380');
  });

  it('keeps a value with YAML syntax in it as one string: substitution happens after parsing', () => {
    const config = parse(`${ORIGIN}purge:\n  tokens: ["\${TOKEN}"]\n`, { TOKEN: '"quoted", [list]: # not a comment' });
    expect(config.purge.tokens).toEqual(['"quoted", [list]: # not a comment']);
  });

  it('gives an unquoted whole reference the type of its value, and keeps a quoted one a string', () => {
    const config = parse(`${ORIGIN}apq:\n  enabled: \${APQ}\n  ttl: \${APQ_TTL}\nrules:\n  - types: [Query]\n    maxAge: 1\n    description: "\${APQ_TTL}"\n`, {
      APQ: 'false',
      APQ_TTL: '3600',
    });
    expect(config.apq).toEqual({ enabled: false, ttl: 3600, forwardPersistedQuery: false, maxBytes: 16 * 1024 * 1024 });
    expect(config.rules[0]?.description).toBe('3600');
  });

  it('uses ${NAME:-fallback} when NAME is unset or empty', () => {
    const text = `${ORIGIN}logging:\n  level: \${LOG_LEVEL:-warn}\n`;
    expect(parse(text).logging.level).toBe('warn');
    expect(parse(text, { LOG_LEVEL: '' }).logging.level).toBe('warn');
    expect(parse(text, { LOG_LEVEL: 'debug' }).logging.level).toBe('debug');
  });

  it('reads $${ as a literal ${ and leaves a lone $ alone', () => {
    const config = parse(`${ORIGIN}purge:\n  tokens: ["$\${NOT_A_VAR}", "pa$$word", "$HOME"]\n`, { NOT_A_VAR: 'x' });
    expect(config.purge.tokens).toEqual(['${NOT_A_VAR}', 'pa$$word', '$HOME']);
  });

  it('ignores references in comments and keys', () => {
    const config = parse(`${ORIGIN}# tokens: ["\${UNSET}"]\nscopes:\n  AUTH: header:authorization\n`);
    expect(config.scopes).toEqual({ AUTH: 'header:authorization' });
  });

  it('names every missing variable and where it is used', () => {
    expect(problems(`${ORIGIN}redis:\n  url: \${REDIS_URL}\npurge:\n  tokens:\n    - "\${SVC_PURGE_TOKEN}"\n    - "\${OTHER}-\${SVC_PURGE_TOKEN}"\n`)).toEqual([
      'config.yaml: redis.url: environment variable REDIS_URL is not set (line 4)',
      'config.yaml: purge.tokens[0]: environment variable SVC_PURGE_TOKEN is not set (line 7)',
      'config.yaml: purge.tokens[1]: environment variable OTHER is not set (line 8)',
      'config.yaml: purge.tokens[1]: environment variable SVC_PURGE_TOKEN is not set (line 8)',
    ]);
  });

  it('refuses listArguments.fields entries that are not Type.field.argument: Type.field', () => {
    expect(problems(`${ORIGIN}listArguments:\n  mode: some\n  fields:\n    Query.usersByTeam: User.teamId\n    Query.usersByTeam.team: teamId\n`)).toEqual([
      'config.yaml: listArguments.mode: expected one of match, any, got "some" (line 4)',
      'config.yaml: listArguments.fields: invalid name "Query.usersByTeam": expected Type.field.argument, e.g. Query.usersByTeam.team (line 6)',
      'config.yaml: listArguments.fields["Query.usersByTeam.team"]: expected Type.field, e.g. User.teamId, or null, got "teamId" (line 7)',
    ]);
  });

  it('reports missing variables together with the other problems in the file', () => {
    expect(problems(`${ORIGIN}purge:\n  tokens: ["\${SVC_PURGE_TOKEN}"]\nmutationPolicy: All\n`)).toEqual([
      'config.yaml: purge.tokens[0]: environment variable SVC_PURGE_TOKEN is not set (line 4)',
      'config.yaml: mutationPolicy: expected one of None, Entity, List, Type, got "All" (line 5)',
    ]);
  });

  it('refuses a malformed reference', () => {
    const fix = 'write ${NAME} or ${NAME:-fallback}, where NAME is letters, digits and "_", or $${ for a literal "${"';
    expect(problems(`${ORIGIN}purge:\n  tokens: ["\${TOKEN-1}", "\${TOKEN"]\n`)).toEqual([
      `config.yaml: purge.tokens[0]: malformed variable reference "\${TOKEN-1}": ${fix} (line 4)`,
      `config.yaml: purge.tokens[1]: "\${" without a closing "}": ${fix} (line 4)`,
    ]);
  });

  it('never shows a value that came from the environment', () => {
    expect(problems(`${ORIGIN}apq:\n  ttl: \${APQ_TTL}\nlogging:\n  level: "\${LEVEL}"\n`, { APQ_TTL: 'hunter2', LEVEL: 'hunter3' })).toEqual([
      'config.yaml: apq.ttl: expected a whole number > 0 and <= 315360000, got the value of ${APQ_TTL} (line 4)',
      'config.yaml: logging.level: expected one of debug, info, warn, error, got the value of ${LEVEL} (line 6)',
    ]);
  });

  it('explains a quoted reference to a number', () => {
    expect(problems(`${ORIGIN}apq:\n  ttl: "\${APQ_TTL}"\n`, { APQ_TTL: '60' })).toEqual([
      'config.yaml: apq.ttl: expected a whole number > 0 and <= 315360000, got the value of ${APQ_TTL} as a string (leave the reference unquoted for a number or true/false) (line 4)',
    ]);
  });
});

describe('parseConfig: refusals', () => {
  it('refuses an unknown key at top level, suggesting the known ones', () => {
    expect(problems(`${ORIGIN}bogus: 1\n`)).toEqual([
      'config.yaml: unknown key "bogus" at top level; expected one of: origin, schema, endpoints, grpc, redis, scopes, rules, keyFields, mutationPolicy, listArguments, purge, apq, persistedDocuments, limits, cache, dashboard, logging (line 3)',
    ]);
  });

  it('refuses an unknown nested key, suggesting the close one', () => {
    expect(problems(`${ORIGIN}rules:\n  - types: [Query]\n    maxAge: 60\n  - types: [Query]\n    maxage: 10\n`)).toEqual([
      'config.yaml: rules[1].maxAge: required, expected a whole number >= 0 and <= 315360000 (line 6)',
      'config.yaml: unknown key "maxage" in rules[1]; did you mean "maxAge"? (line 7)',
    ]);
    expect(problems(`origin:\n  url: http://origin.test/graphql\n  URL: http://x\n`)).toEqual([
      'config.yaml: unknown key "URL" in origin; did you mean "url"? (line 3)',
    ]);
    expect(problems(`${ORIGIN}purge:\n  token: abc\n`)).toEqual(['config.yaml: unknown key "token" in purge; did you mean "tokens"? (line 4)']);
  });

  it('refuses wrong types, naming what is expected and what was found', () => {
    expect(
      problems(`${ORIGIN}rules:
  - types: [Query]
    maxAge: ten
  - types: Query
    maxAge: -1
    swr: 1.5
  - types: { Query: me }
    maxAge: 1
apq:
  enabled: yes
  ttl: 0
mutationPolicy: Entities
keyFields:
  types: { Product: [] }
limits:
  maxDepth: [3]
logging: verbose
`),
    ).toEqual([
      'config.yaml: rules[0].maxAge: expected a whole number >= 0 and <= 315360000, got "ten" (line 5)',
      'config.yaml: rules[1].types: expected a list of type names, or a mapping of type name to a list of its field names, got "Query" (line 6)',
      'config.yaml: rules[1].maxAge: expected a whole number >= 0 and <= 315360000, got -1 (line 7)',
      'config.yaml: rules[1].swr: expected a whole number >= 0 and <= 315360000, got 1.5 (line 8)',
      'config.yaml: rules[2].types.Query: expected a list of field names, got "me" (line 9)',
      'config.yaml: apq.enabled: expected true or false, got "yes" (line 12)',
      'config.yaml: apq.ttl: expected a whole number > 0 and <= 315360000, got 0 (line 13)',
      'config.yaml: mutationPolicy: expected one of None, Entity, List, Type, got "Entities" (line 14)',
      'config.yaml: keyFields.types.Product: expected a non-empty list of field names, got an empty list (line 16)',
      'config.yaml: limits.maxDepth: expected a whole number > 0 and <= 200, got a list (line 18)',
      'config.yaml: logging: expected a mapping with the key level, got "verbose" (line 19)',
    ]);
  });

  it('refuses a gzip level past 9, and an unknown compression', () => {
    expect(problems(`${ORIGIN}cache:\n  compression: { encoding: gzip, level: 11 }\n`)).toEqual([
      'config.yaml: cache.compression.level: gzip levels are 1 to 9 (line 4)',
    ]);
    expect(problems(`${ORIGIN}cache:\n  compression: { encoding: zstd }\n`)).toEqual([
      'config.yaml: cache.compression.encoding: expected one of gzip, br, identity, got "zstd" (line 4)',
    ]);
  });

  it('refuses a missing or malformed origin', () => {
    expect(problems('rules: []\n')).toEqual(['config.yaml: origin: required, expected a mapping with the key url (line 1)']);
    expect(problems('origin: http://origin.test/graphql\n')).toEqual([
      'config.yaml: origin: expected a mapping with the key url, got "http://origin.test/graphql" (line 1)',
    ]);
    expect(problems('origin:\n  url: ftp://origin.test\n')).toEqual([
      'config.yaml: origin.url: expected an http:// or https:// URL, got "ftp://origin.test" (line 2)',
    ]);
    expect(problems('origin:\n  url:\n')).toEqual(['config.yaml: origin.url: expected an http:// or https:// URL, got an empty value (line 2)']);
  });

  it('refuses a bad scope definition or name', () => {
    expect(problems(`${ORIGIN}scopes:\n  AUTH: authorization\n  TEAM: header:x-team|query:team\n  my-scope: header:x\n  PUBLIC: header:x\n`)).toEqual([
      'config.yaml: scopes.AUTH: expected "header:NAME", "cookie:NAME" or several joined with "|", e.g. "header:x-team|cookie:team", got "authorization" (line 4)',
      'config.yaml: scopes.TEAM: expected "header:NAME", "cookie:NAME" or several joined with "|", e.g. "header:x-team|cookie:team", got "header:x-team|query:team" (line 5)',
      'config.yaml: scopes: invalid name "my-scope": expected letters, digits and "_", not starting with a digit (line 6)',
      'config.yaml: scopes.PUBLIC: PUBLIC is built in and cannot be redefined (line 7)',
    ]);
    expect(problems(`${ORIGIN}scopes: [header:authorization]\n`)).toEqual([
      'config.yaml: scopes: expected a mapping of scope name to "header:NAME", "cookie:NAME", several joined with "|", or { definition, jwt }, got a list (line 3)',
    ]);
  });

  it('reads a JWT scope, its secret from the environment and a relative jwksFile against baseDir', () => {
    const jwt = (settings: string) => `${ORIGIN}scopes:\n  USER:\n    definition: header:authorization\n    jwt:\n${settings}`;
    const config = parse(jwt('      claim: org.id\n      algorithms: [HS256, HS512]\n      secret: ${JWT_SECRET}\n      audience: api\n'), { JWT_SECRET: 'from-env' });
    expect(config.scopes.USER).toEqual({
      definition: 'header:authorization',
      jwt: { claim: 'org.id', algorithms: ['HS256', 'HS512'], secret: 'from-env', audience: 'api', clockToleranceSeconds: 0 },
    });
    const fromFile = parse(jwt('      claim: sub\n      algorithms: [RS256]\n      jwksFile: keys/jwks.json\n'));
    expect(fromFile.scopes.USER).toMatchObject({ jwt: { jwksFile: '/etc/svc-cache/keys/jwks.json' } });
  });

  it('refuses a JWT scope with alg none, no or two key sources, a secret for RS256, or two token sources', () => {
    const jwt = (definition: string, settings: string) => `${ORIGIN}scopes:\n  USER:\n    definition: ${definition}\n    jwt:\n${settings}`;
    const cases: Array<[string, string, string]> = [
      ['header:authorization', 'algorithms: [none]\n      secret: s', 'jwt.algorithms[0]: expected one of HS256, HS384, HS512, RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, got "none" (line 8)'],
      ['header:authorization', 'algorithms: [HS256]', 'jwt: expected exactly one of secret, publicKey, jwksFile, jwksUrl (found 0), got a mapping (line 7)'],
      ['header:authorization', 'algorithms: [RS256]\n      secret: a-secret\n      jwksUrl: https://auth.test/jwks', 'jwt: expected exactly one of secret, publicKey, jwksFile, jwksUrl (found 2), got a mapping (line 7)'],
      ['header:authorization', 'algorithms: [RS256]\n      secret: a-secret', 'jwt.algorithms: a secret verifies only HS256, HS384 and HS512 (line 8)'],
      ['header:authorization', 'algorithms: [HS256, RS256]\n      jwksUrl: https://auth.test/jwks', 'jwt.algorithms: HS256, HS384 and HS512 need a secret, not jwksUrl (line 8)'],
      ['header:authorization', 'algorithms: [RS256]\n      publicKey: not-a-key', 'jwt.publicKey: expected a PEM public key ("-----BEGIN PUBLIC KEY-----..."), got a secret of 9 characters (not shown) (line 9)'],
      ['header:authorization|cookie:session', 'algorithms: [HS256]\n      secret: s', 'definition: expected one "header:NAME" or "cookie:NAME": where the token is, got "header:authorization|cookie:session" (line 5)'],
    ];
    for (const [definition, settings, problem] of cases) {
      expect(problems(jwt(definition, `      claim: sub\n      ${settings}\n`))).toEqual([`config.yaml: scopes.USER.${problem}`]);
    }
  });

  it('refuses a rule naming an unknown scope, also when other values are invalid', () => {
    const unknown = (name: string) =>
      `unknown scope "${name}": expected one of PUBLIC, AUTHENTICATED (PUBLIC is built in, the others come from "scopes")`;
    expect(
      problems(`${ORIGIN}scopes:\n  AUTHENTICATED: header:authorization\nrules:\n  - types: [Query]\n    maxAge: 1.5\n    scope: AUTHENTICATD\n  - types: [Query]\n    maxAge: 1\n    scope: toString\n  - types: [Query]\n    maxAge: 1\n    scope: PUBLIC\n`),
    ).toEqual([
      'config.yaml: rules[0].maxAge: expected a whole number >= 0 and <= 315360000, got 1.5 (line 7)',
      `config.yaml: rules[0].scope: ${unknown('AUTHENTICATD')} (line 8)`,
      `config.yaml: rules[1].scope: ${unknown('toString')} (line 11)`,
    ]);
  });

  it('never quotes secrets back', () => {
    expect(problems(`${ORIGIN}cache:\n  scopeKeySecret: short-secret\npurge:\n  tokens: [""]\nredis:\n  url: http://:password@redis\n`)).toEqual([
      'config.yaml: cache.scopeKeySecret: expected a string of at least 16 characters, got a secret of 12 characters (not shown) (line 4)',
      'config.yaml: purge.tokens[0]: expected a non-empty string, got a secret of 0 characters (not shown) (line 6)',
      'config.yaml: redis.url: expected a redis:// or rediss:// URL such as redis://host:6379, got "http://[redacted]@redis" (line 8)',
    ]);
  });

  // The deployment audit: an unquoted `${SVC_SCOPE_KEY_SECRET}` whose value was all digits or `true`
  // was read as a number or a boolean, and refused as "a secret (not shown)" with no hint of why.
  it('says what type a secret was read as, and which variable gave it, without showing it', () => {
    const digits = '12345678901234567890';
    const written = `${ORIGIN}cache:\n  scopeKeySecret: \${SVC_SCOPE_KEY_SECRET}\npurge:\n  tokens:\n    - \${SVC_PURGE_TOKEN}\n`;
    const refused = problems(written, { SVC_SCOPE_KEY_SECRET: digits, SVC_PURGE_TOKEN: 'true' });
    expect(refused).toEqual([
      'config.yaml: cache.scopeKeySecret: expected a string of at least 16 characters, got a secret read as a number (not shown; a quoted value stays a string) (with the value of ${SVC_SCOPE_KEY_SECRET}) (line 4)',
      'config.yaml: purge.tokens[0]: expected a non-empty string, got a secret read as true or false (not shown; a quoted value stays a string) (with the value of ${SVC_PURGE_TOKEN}) (line 7)',
    ]);
    expect(refused.join('\n')).not.toContain(digits.slice(0, 12));
    expect(problems(`${ORIGIN}cache:\n  scopeKeySecret: 1234567890123456789\n`)).toEqual([
      'config.yaml: cache.scopeKeySecret: expected a string of at least 16 characters, got a secret read as a number (not shown; a quoted value stays a string) (line 4)',
    ]);
    const quoted = parse(`${ORIGIN}cache:\n  scopeKeySecret: "\${SVC_SCOPE_KEY_SECRET}"\npurge:\n  tokens: ["\${SVC_PURGE_TOKEN}"]\n`, {
      SVC_SCOPE_KEY_SECRET: digits,
      SVC_PURGE_TOKEN: 'true',
    });
    expect(quoted.cache.scopeKeySecret).toBe(digits);
    expect(quoted.purge.tokens).toEqual(['true']);
  });

  // The admin-surface audit: `check` said valid, and `serve` could never load the schema (fetch
  // refuses a URL with credentials), showing the password on /readyz.
  it('refuses an origin.url with a user or password, quoting it without them', () => {
    expect(problems('origin:\n  url: http://user:OriginPW@origin.test/graphql\n')).toEqual([
      'config.yaml: origin.url: expected an http:// or https:// URL without a user or password (svc-cache cannot send them), got "http://[redacted]@origin.test/graphql" (line 2)',
    ]);
  });

  it("never quotes a URL's query values, which may carry its access token", () => {
    const jwt = 'scopes:\n  USER:\n    definition: header:authorization\n    jwt:\n      claim: sub\n      algorithms: [RS256]\n';
    expect(problems(`${ORIGIN}${jwt}      jwksUrl: ftp://idp.test/jwks?token=s3cret-token&v=2\n`)).toEqual([
      'config.yaml: scopes.USER.jwt.jwksUrl: expected an http:// or https:// URL, got "ftp://idp.test/jwks?token=[redacted]&v=[redacted]" (line 9)',
    ]);
  });

  // The new user's run: `tokens: <token>` quoted the token on stderr, in the reload log and on the
  // admin port's /api/config, where the element's mark was never reached.
  it('never quotes a secret given where a list or mapping of secrets belongs', () => {
    expect(problems(`${ORIGIN}purge:\n  tokens: literal-purge-secret-XYZ\n`)).toEqual([
      'config.yaml: purge.tokens: expected a list of non-empty strings, got a secret of 24 characters (not shown) (line 4)',
    ]);
    expect(problems(`${ORIGIN}purge: literal-purge-secret-XYZ\n`)).toEqual([
      'config.yaml: purge: expected a mapping with the keys tokens, header, got a secret of 24 characters (not shown) (line 3)',
    ]);
    expect(problems(`${ORIGIN}redis: redis://:hunter2@redis:6379\n`)).toEqual([
      'config.yaml: redis: expected a mapping with the keys url, keyPrefix, cluster, sentinel, commandTimeoutMs, localCache, got "redis://[redacted]@redis:6379" (line 3)',
    ]);
  });

  it('refuses a file that is empty or not a mapping', () => {
    expect(problems('')).toEqual(['config.yaml: the file is empty: expected a mapping with at least origin.url']);
    expect(problems('# nothing yet\n')).toEqual(['config.yaml: the file is empty: expected a mapping with at least origin.url']);
    expect(problems('- origin\n')[0]).toMatch(/^config\.yaml: top level: expected a mapping with the keys origin, schema, .*, got a list \(line 1\)$/);
  });
});

describe('parseConfig: bad YAML', () => {
  it('reports bad indentation with its line and column', () => {
    expect(problems(`${ORIGIN}rules:\n  - types: [Query]\n     maxAge: 5\n`)).toEqual([
      'config.yaml: line 5, column 1: bad YAML indentation: all mapping items must start at the same column',
    ]);
  });

  it('reports tabs, duplicate keys and unclosed brackets', () => {
    expect(problems(`${ORIGIN}apq:\n\tenabled: true\n`)).toEqual([
      'config.yaml: line 4, column 1: bad YAML indentation: tabs are not allowed as indentation',
    ]);
    expect(problems(`${ORIGIN}mutationPolicy: List\nmutationPolicy: Type\n`)).toEqual([
      'config.yaml: line 4, column 1: duplicate key "mutationPolicy": a key may appear only once in a mapping',
    ]);
    expect(problems(`${ORIGIN}rules: [{ types: [Query], maxAge: 5 }\n`)).toEqual([
      'config.yaml: line 4, column 1: bad YAML: flow sequence in block collection must be sufficiently indented and end with a ] (is a closing bracket missing?)',
    ]);
  });

  it('reports an alias to an anchor that does not exist', () => {
    expect(problems(`${ORIGIN}rules:\n  - *missing\n`)).toEqual([
      'config.yaml: line 4, column 5: bad YAML: *missing refers to no anchor (an anchor &missing must come before it)',
    ]);
  });
});

describe('loadConfig', () => {
  let directory: string | undefined;
  afterEach(async () => {
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('reads the file and resolves schema.file against its directory', async () => {
    directory = await mkdtemp(join(tmpdir(), 'svc-cache-config-'));
    await writeFile(join(directory, 'schema.graphql'), 'type Query { hello: String }');
    await writeFile(join(directory, 'config.yaml'), `${ORIGIN}schema:\n  file: schema.graphql\n`);
    const config = await loadConfig(join(directory, 'config.yaml'), {});
    expect(config.schema?.file).toBe(join(directory, 'schema.graphql'));
  });

  it('refuses a missing file, and a schema.file that cannot be read, naming the path', async () => {
    directory = await mkdtemp(join(tmpdir(), 'svc-cache-config-'));
    const path = join(directory, 'config.yaml');
    await expect(loadConfig(path, {})).rejects.toThrow(new ConfigError(path, ['cannot read the file: no such file']));
    await writeFile(path, `${ORIGIN}schema:\n  file: missing.graphql\n`);
    await expect(loadConfig(path, {})).rejects.toThrow(`${path}: schema.file: cannot read "${join(directory, 'missing.graphql')}": no such file`);
  });

  it('substitutes from process.env by default', async () => {
    directory = await mkdtemp(join(tmpdir(), 'svc-cache-config-'));
    const path = join(directory, 'config.yaml');
    await writeFile(path, 'origin:\n  url: ${SVC_CACHE_TEST_ORIGIN}\n');
    process.env.SVC_CACHE_TEST_ORIGIN = 'http://from-env.test/graphql';
    try {
      expect((await loadConfig(path)).origin.url).toBe('http://from-env.test/graphql');
    } finally {
      delete process.env.SVC_CACHE_TEST_ORIGIN;
    }
  });
});

describe('demoConfig', () => {
  it('is a valid configuration with the documented demo settings', () => {
    const config = demoConfig('http://localhost:4000/graphql');
    expect(configSchema.parse(config)).toEqual(config);
    expect(config.origin.url).toBe('http://localhost:4000/graphql');
    expect(config.redis).toBeUndefined();
    expect(config.scopes).toEqual({ AUTHENTICATED: 'header:authorization' });
    expect(config.rules).toEqual([
      { description: 'Cache all queries for 15 minutes', types: ['Query'], maxAge: 900, swr: 900, staleIfError: 0 },
      { description: 'Per-user data', types: { Query: ['me'] }, maxAge: 60, swr: 0, staleIfError: 0, scope: 'AUTHENTICATED' },
    ]);
    expect(config.purge.tokens).toEqual(['dev-purge-token']);
    expect(config.apq.enabled).toBe(true);
  });
});

describe('demoConfigFrom', () => {
  it("runs a user's configuration against the demo origin on the in-memory store", () => {
    const userConfig = parseConfig('origin:\n  url: http://api.internal/graphql\nredis:\n  url: redis://redis:6379\nrules:\n  - types: [Query]\n    maxAge: 60\n', { source: 'config.yaml', env: {} });
    const { config, setAside } = demoConfigFrom(userConfig, 'http://127.0.0.1:4000/graphql');
    expect([config.origin.url, config.redis, config.grpc?.tls, setAside, config.rules]).toEqual(['http://127.0.0.1:4000/graphql', undefined, undefined, ['redis'], userConfig.rules]);
    expect(demoConfigFrom(demoConfig('http://x.test/graphql'), 'http://127.0.0.1:4000/graphql').setAside).toEqual([]);
  });
});

describe('parseConfig: redis section', () => {
  const parseRedis = (redis: string) => () =>
    parseConfig(`origin:\n  url: http://origin.test/graphql\nredis:\n${redis}`, { source: 'config.yaml', env: {} });

  it('refuses a redis section that names no server, both cluster and sentinel, or braces in keyPrefix', () => {
    expect(parseRedis('  keyPrefix: "app:"\n')).toThrow('config.yaml: redis: expected url, cluster or sentinel: which Redis to use');
    expect(parseRedis('  cluster:\n    nodes: [a:1]\n  sentinel:\n    name: m\n    sentinels: [b:2]\n')).toThrow(
      'config.yaml: redis.sentinel: cluster and sentinel exclude each other: configure one of them',
    );
    expect(parseRedis('  url: redis://r:6379\n  keyPrefix: "{app}:"\n')).toThrow(
      'config.yaml: redis.keyPrefix: must not contain "{" or "}": svc-cache places its own Redis Cluster hash tags',
    );
  });

  it('reports the section\'s other problems beside a value of the wrong type, which stops zod\'s own refinements', () => {
    const problemsOf = (text: string): string[] => {
      try {
        parseConfig(text, { source: 'config.yaml', env: {} });
      } catch (error) {
        return [...(error as ConfigError).problems];
      }
      throw new Error('expected the configuration to be refused');
    };
    expect(problemsOf(`${ORIGIN}redis:\n  url: 6379\n  keyPrefix: "svc{x}"\n`)).toEqual([
      'config.yaml: redis.url: expected a string, got a secret read as a number (not shown; a quoted value stays a string) (line 4)',
      'config.yaml: redis.keyPrefix: must not contain "{" or "}": svc-cache places its own Redis Cluster hash tags (line 5)',
    ]);
    expect(
      problemsOf(`${ORIGIN}rules:\n  - types: [Query]\n    maxAge: soon\nredis:\n  cluster:\n    nodes: [a:1]\n  sentinel:\n    name: m\n    sentinels: [b:2]\n  localCache:\n    enabled: true\n`),
    ).toEqual([
      'config.yaml: rules[0].maxAge: expected a whole number >= 0 and <= 315360000, got "soon" (line 5)',
      'config.yaml: redis.sentinel: cluster and sentinel exclude each other: configure one of them (line 10)',
      'config.yaml: redis.localCache.enabled: the local cache is not available with redis.cluster: invalidation tracking and the purge acknowledgement are per node; remove it or set it to false (line 13)',
    ]);
    expect(problemsOf(`${ORIGIN}redis:\n  keyPrefix: 7\n`)).toEqual([
      'config.yaml: redis.keyPrefix: expected a string, got 7 (line 4)',
      'config.yaml: redis: expected url, cluster or sentinel: which Redis to use, got a mapping (line 4)',
    ]);
  });

  it('refuses the local cache turned on with a Cluster, and leaves it to its defaults otherwise', () => {
    expect(parseRedis('  cluster:\n    nodes: [a:1]\n  localCache:\n    enabled: true\n')).toThrow(
      'config.yaml: redis.localCache.enabled: the local cache is not available with redis.cluster: invalidation tracking and the purge acknowledgement are per node; remove it or set it to false',
    );
    expect(parseRedis('  cluster:\n    nodes: [a:1]\n  localCache:\n    enabled: false\n')().redis?.localCache).toEqual({
      enabled: false,
      maxBytes: 64 * 1024 * 1024,
    });
    expect(parseRedis('  url: redis://r:6379\n')().redis?.localCache).toBeUndefined();
    expect(parseRedis('  url: redis://r:6379\n  localCache:\n    maxBytes: 1000\n    ackTimeoutMs: 800\n')().redis?.localCache).toEqual({
      maxBytes: 1000,
      ackTimeoutMs: 800,
    });
    expect(parseRedis('  url: redis://r:6379\n  localCache:\n    ackTimeoutMs: 0\n')).toThrow('config.yaml: redis.localCache.ackTimeoutMs:');
  });
});
