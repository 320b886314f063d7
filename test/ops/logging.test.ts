import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { createLogger, withSecretHeaders } from '../../src/observability/log.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { startDemoOrigin, type DemoOrigin } from '../support/origin.js';
import { testConfig } from '../support/stack.js';

/** Logs are JSON lines at the configured level, and never carry a token, a cookie or an Authorization value. */

function memoryDestination(): { destination: Writable; lines: () => string[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { destination, lines: () => chunks.join('').split('\n').filter(Boolean) };
}

describe('log redaction', () => {
  it('redacts credentials in header maps, at the top level or one level down, whatever the case of the configured name', () => {
    const { destination, lines } = memoryDestination();
    const logger = withSecretHeaders(createLogger('info', 'svc-cache', { destination }), () => ['X-Team']);
    logger.info({ headers: { authorization: 'Bearer a', cookie: 'c', 'svc-purge-token': 't', 'x-team': 'blue', accept: '*/*' } }, 'top');
    logger.info({ request: { headers: { 'proxy-authorization': 'p', 'set-cookie': 's' } } }, 'nested');
    const [top, nested] = lines().map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>);
    expect(top!.headers).toEqual({
      authorization: '[redacted]',
      cookie: '[redacted]',
      'svc-purge-token': '[redacted]',
      'x-team': '[redacted]',
      accept: '*/*',
    });
    expect(nested!.request).toEqual({ headers: { 'proxy-authorization': '[redacted]', 'set-cookie': '[redacted]' } });
  });

  it('redacts the names of the moment: a reload that adds a scope header is redacted from the next line on', () => {
    const { destination, lines } = memoryDestination();
    let names: readonly string[] = ['x-team'];
    const logger = withSecretHeaders(createLogger('info', 'svc-cache', { destination }), () => names);
    const headers = { 'X-Team': 'blue', 'x-tenant': 'acme' };
    logger.info({ headers }, 'before');
    names = ['x-tenant'];
    logger.info({ headers }, 'after');
    expect(lines().map((line) => (JSON.parse(line) as { headers: unknown }).headers)).toEqual([
      { 'X-Team': '[redacted]', 'x-tenant': 'acme' },
      { 'X-Team': 'blue', 'x-tenant': '[redacted]' },
    ]);
  });

  it('redacts a header list of [name, value] pairs, as the engine holds headers', () => {
    const { destination, lines } = memoryDestination();
    const logger = withSecretHeaders(createLogger('info', 'svc-cache', { destination }), () => ['x-team']);
    logger.info({ requestHeaders: [['Authorization', 'Bearer a'], ['x-team', 'blue'], ['accept', '*/*']] }, 'list');
    expect(JSON.parse(lines()[0]!).requestHeaders).toEqual([['Authorization', '[redacted]'], ['x-team', '[redacted]'], ['accept', '*/*']]);
  });

  it('keeps a password in a URL out of the logs', () => {
    const { destination, lines } = memoryDestination();
    createLogger('info', 'svc-cache', { destination }).info({ url: 'https://user:hunter2@origin.test/graphql' }, 'schema');
    expect(JSON.parse(lines()[0]!).url).toBe('https://origin.test/graphql');
  });

  // The admin-surface audit: an origin.url carrying `?api_key=...` was logged and shown on /readyz.
  it("keeps a URL's query values out of the logs, and its names in", () => {
    const { destination, lines } = memoryDestination();
    createLogger('info', 'svc-cache', { destination }).info({ url: 'https://origin.test/graphql?api_key=QSECRET&v=2' }, 'schema');
    expect(JSON.parse(lines()[0]!).url).toBe('https://origin.test/graphql?api_key=[redacted]&v=[redacted]');
  });

  it('writes JSON lines at the configured level only', () => {
    const { destination, lines } = memoryDestination();
    const logger = createLogger('warn', 'svc-cache', { destination });
    logger.info('not written');
    logger.warn('written');
    expect(lines().map((line) => JSON.parse(line))).toEqual([expect.objectContaining({ level: 40, msg: 'written', name: 'svc-cache' })]);
  });
});

describe('a sidecar at debug level under traffic full of credentials', () => {
  const SECRETS = {
    authorization: 'Bearer alice',
    bearerToken: 'alice-token-4d1f9c',
    cookie: 'session-cookie-8e2a71',
    team: 'team-value-5b3c0d',
    purgeToken: 'purge-token-7c9e13',
    wrongPurgeToken: 'wrong-token-2f8a44',
  };
  const { destination, lines } = memoryDestination();
  let origin: DemoOrigin;
  let sidecar: Sidecar;
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    origin = await startDemoOrigin({ port: 0 });
    sidecar = await startSidecar({
      config: testConfig(origin.url, {
        scopes: { AUTHENTICATED: 'header:authorization', SESSION: 'cookie:session', TEAM: 'header:x-team' },
        rules: [
          { types: ['Query'], maxAge: 60 },
          { types: { Query: ['me'] }, maxAge: 60, scope: 'AUTHENTICATED' },
          { types: { Query: ['users'] }, maxAge: 60, scope: 'SESSION' },
          { types: { Query: ['products'] }, maxAge: 60, scope: 'TEAM' },
        ],
        purge: { tokens: [SECRETS.purgeToken] },
        logging: { level: 'debug' },
      }),
      grpcPort: 0,
      adminPort: 0,
      host: '127.0.0.1',
      logger: createLogger('debug', 'svc-cache', { destination }),
    });
    await sidecar.schemaReady;
    gateway = await startGateway({ processor: `127.0.0.1:${sidecar.grpcPort}`, origin: origin.url, port: 0 });
    url = `${gateway.url}/graphql`;
  });
  afterAll(async () => {
    await gateway.close();
    await sidecar.close(1000);
    await origin.close();
  });

  it('logs none of them', async () => {
    const credentials = {
      authorization: `Bearer ${SECRETS.bearerToken}`,
      cookie: `session=${SECRETS.cookie}`,
      'x-team': SECRETS.team,
    };
    const post = async (query: string, headers: Record<string, string>): Promise<void> => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query }),
      });
      await response.arrayBuffer();
    };
    for (let round = 0; round < 2; round += 1) {
      await post('{ me { id name } users { id } products { sku } }', credentials);
      await post('{ me { id } }', { authorization: SECRETS.authorization });
    }
    await post('mutation { _purgeAll }', { 'svc-purge-token': SECRETS.wrongPurgeToken, ...credentials });
    await post('mutation { _purgeAll }', { 'svc-purge-token': SECRETS.purgeToken, 'svc-debug': '1' });
    await post('{ todos { id } }', { 'svc-purge-token': SECRETS.purgeToken, 'svc-debug': '1', ...credentials });
    await post('not graphql', credentials);

    const logged = lines().join('\n');
    expect(logged).toContain('svc-cache serving');
    for (const secret of [SECRETS.bearerToken, SECRETS.cookie, SECRETS.team, SECRETS.purgeToken, SECRETS.wrongPurgeToken]) {
      expect(logged).not.toContain(secret);
    }
    expect(logged).not.toContain(SECRETS.authorization);
  });
});

describe('schema warnings', () => {
  it('warns at start of each purge field the origin\'s own mutations keep from the purge API', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-cache-purge-warning-'));
    const file = join(dir, 'origin.graphql');
    await writeFile(file, 'type Query { todos: [Todo!]! }\ntype Todo { id: ID! }\ntype Mutation { purgeTodo(id: ID!): Boolean }\n');
    const { destination, lines } = memoryDestination();
    const sidecar = await startSidecar({
      config: testConfig('http://127.0.0.1:9/graphql', { schema: { file } }),
      grpcPort: 0,
      adminPort: 0,
      host: '127.0.0.1',
      logger: createLogger('info', 'svc-cache', { destination }),
    });
    try {
      await sidecar.schemaReady;
      const warnings = lines()
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.msg.startsWith('purge field'));
      expect(warnings).toEqual([
        expect.objectContaining({
          level: 40,
          msg: "purge field purgeTodo is not offered: the origin's Mutation type has a field purgeTodo; requests for it go to the origin",
        }),
      ]);
    } finally {
      await sidecar.close(1000);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
