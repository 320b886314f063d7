import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REGISTRATION_OVERHEAD_BYTES } from '../../src/apq/index.js';
import { startFileConfiguredStack, RELOADED, REFUSED, type FileConfiguredStack } from '../support/fileConfiguredStack.js';
import { rsaKey, rsToken, type SigningKey } from '../support/jwt.js';
import { persistedQueryExtensions, postGraphQL, type GraphQLHttpResult } from '../support/origin.js';

/**
 * The configuration file followed live, as `svc-cache serve --config FILE` runs: a real YAML file in
 * a temporary directory, replaced while requests flow through the gateway and real ext_proc gRPC.
 * Each step waits for the sidecar to log that it read the new file, never for a guessed delay.
 */

const TODOS = '{ todos { id } }';
const USERS = '{ users { id } }';
const TIME = '{ time }';
const TODOS_BODY = '{"data":{"todos":[{"id":"1"},{"id":"2"},{"id":"3"}]}}';
const USERS_BODY = '{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}';

function configFile(rules: string, scopes = ''): string {
  return `# written by configReload.test.ts
origin:
  url: {{ORIGIN_URL}}
schema:
  file: {{SCHEMA_FILE}}
${scopes}rules:
${rules}`;
}

const TODOS_ONLY = configFile(`  - description: the todo list
    types: { Query: [todos] }
    maxAge: 60
`);

const USERS_ONLY = configFile(`  - description: the user list
    types:
      Query: [users]
    maxAge: 60
`);

const NEEDS_RESTART = 'these changed settings take effect only after a restart';
const CONFIG_WARNING = 'configuration warning';

function jwtScope(audience: string): string {
  return `scopes:
  USER:
    definition: header:authorization
    jwt:
      claim: sub
      algorithms: [HS256]
      secret: configReload-test-secret-of-32-bytes
${audience}`;
}

function statuses(results: readonly GraphQLHttpResult<unknown>[]): Array<string | undefined> {
  return results.map((result) => result.headers['svc-cache']);
}

async function twice(
  stack: FileConfiguredStack,
  query: string,
  headers: Record<string, string> = {},
): Promise<GraphQLHttpResult<unknown>[]> {
  return [await postGraphQL(stack.url, { query }, headers), await postGraphQL(stack.url, { query }, headers)];
}

describe('configuration file hot reload through the gateway', () => {
  let stack: FileConfiguredStack | undefined;

  let jwksDirectory: string | undefined;

  afterEach(async () => {
    await stack?.close();
    stack = undefined;
    if (jwksDirectory !== undefined) await rm(jwksDirectory, { recursive: true, force: true });
    jwksDirectory = undefined;
  });

  it('applies changed rules to the next requests without a restart', async () => {
    stack = await startFileConfiguredStack(TODOS_ONLY);
    const before = [...(await twice(stack, TODOS)), ...(await twice(stack, USERS))];
    expect(statuses(before)).toEqual(['MISS', 'HIT', 'PASS', 'PASS']);

    await stack.writeConfig(USERS_ONLY);
    await stack.log.waitFor(RELOADED, 1);
    const after = [...(await twice(stack, TODOS)), ...(await twice(stack, USERS))];
    expect(statuses(after)).toEqual(['PASS', 'PASS', 'MISS', 'HIT']);
    expect(after.map((result) => result.text)).toEqual([TODOS_BODY, TODOS_BODY, USERS_BODY, USERS_BODY]);
    expect(stack.log.messages).not.toContain(NEEDS_RESTART);
  });

  it('refuses a broken file and keeps serving with the rules it had, then takes the next valid file', async () => {
    stack = await startFileConfiguredStack(TODOS_ONLY);
    await stack.writeConfig(USERS_ONLY);
    await stack.log.waitFor(RELOADED, 1);
    expect(statuses(await twice(stack, USERS))).toEqual(['MISS', 'HIT']);

    await stack.writeConfig(configFile(`  - types: { Query: [todos] }\n    maxAge: -5\n`));
    await stack.log.waitFor(REFUSED, 1);
    await stack.writeConfig(`${USERS_ONLY}  - types: [Query\n`);
    await stack.log.waitFor(REFUSED, 2);
    const whileBroken = [...(await twice(stack, TODOS)), await postGraphQL(stack.url, { query: USERS })];
    expect(statuses(whileBroken)).toEqual(['PASS', 'PASS', 'HIT']);
    expect(whileBroken.map((result) => result.text)).toEqual([TODOS_BODY, TODOS_BODY, USERS_BODY]);

    await stack.writeConfig(TODOS_ONLY);
    await stack.log.waitFor(RELOADED, 2);
    expect(statuses(await twice(stack, TODOS))).toEqual(['MISS', 'HIT']);
    expect(statuses(await twice(stack, USERS))).toEqual(['PASS', 'PASS']);
    expect(stack.log.messages.filter((message) => message === RELOADED || message === REFUSED)).toEqual([
      RELOADED,
      REFUSED,
      REFUSED,
      RELOADED,
    ]);
  });

  it('applies a new scope definition live: the bucket follows the newly named header', async () => {
    const byAuthorization = configFile(
      `  - types: { Query: [time] }\n    maxAge: 60\n    scope: PER_CLIENT\n`,
      'scopes:\n  PER_CLIENT: header:authorization\n',
    );
    stack = await startFileConfiguredStack(byAuthorization);
    const alice = { authorization: 'Bearer alice', 'x-tenant': 'one' };
    const bob = { authorization: 'Bearer bob', 'x-tenant': 'one' };
    const before = [...(await twice(stack, TIME, alice)), await postGraphQL(stack.url, { query: TIME }, bob)];
    expect(statuses(before)).toEqual(['MISS', 'HIT', 'MISS']);
    expect(before[1]?.headers['vary']).toBe('authorization');

    await stack.writeConfig(byAuthorization.replace('header:authorization', 'header:x-tenant'));
    await stack.log.waitFor(RELOADED, 1);
    // The bucket follows at once, and so do the header names kept out of logs: nothing waits for a restart.
    expect(stack.log.messages).not.toContain(NEEDS_RESTART);
    const tenantOne = await postGraphQL(stack.url, { query: TIME }, bob);
    const tenantOneOtherClient = await postGraphQL(stack.url, { query: TIME }, alice);
    const tenantTwo = await postGraphQL(stack.url, { query: TIME }, { ...alice, 'x-tenant': 'two' });
    expect(statuses([tenantOne, tenantOneOtherClient, tenantTwo])).toEqual(['MISS', 'HIT', 'MISS']);
    expect(tenantOneOtherClient.text).toBe(tenantOne.text);
    expect(tenantTwo.text).not.toBe(tenantOne.text);
    expect(tenantOneOtherClient.headers['vary']).toBe('x-tenant');
  });

  // The reload audit: Product given a key field by a reload; its mutation then named Product:sku-1,
  // the entry stored before carried only the type's tag, and it was served stale for its maxAge.
  it('keys entries apart once keyFields change, so those tagged before are not served past mutations that no longer name them', async () => {
    const PRODUCT = '{ product(sku: "sku-1") { sku name price } }';
    const everything = configFile(`  - types: [Query]\n    maxAge: 900\n`);
    stack = await startFileConfiguredStack(everything);
    expect(statuses(await twice(stack, PRODUCT))).toEqual(['MISS', 'HIT']);

    await stack.writeConfig(`${everything}keyFields:\n  types:\n    Product: [sku]\n`);
    await stack.log.waitFor(RELOADED, 1);
    await postGraphQL(stack.url, { query: 'mutation { updateProduct(sku: "sku-1", price: 99) { sku price } }' });
    const after = await twice(stack, PRODUCT);
    expect(statuses(after)).toEqual(['MISS', 'HIT']);
    expect(after.map((result) => (result.json as { data: { product: { price: number } } }).data.product.price)).toEqual([99, 99]);
  });

  it('shows and keeps the start-only settings as they were, and warns of them at every reload until a restart', async () => {
    stack = await startFileConfiguredStack(TODOS_ONLY);
    const shown = async () => {
      const view = (await (await fetch(`http://127.0.0.1:${stack!.sidecar.adminPort}/api/config`)).json()) as {
        config: { cache: { memoryMaxBytes: number }; logging: { level: string }; rules: Array<{ description?: string }> };
      };
      return [view.config.cache.memoryMaxBytes, view.config.logging.level, view.config.rules[0]?.description];
    };
    const started = await shown();
    await stack.writeConfig(`${TODOS_ONLY}cache:\n  memoryMaxBytes: 1000000\nlogging:\n  level: debug\n`);
    await stack.log.waitFor(RELOADED, 1);
    await stack.log.waitFor(NEEDS_RESTART, 1);
    expect(await shown()).toEqual(started);

    await stack.writeConfig(`${USERS_ONLY}cache:\n  memoryMaxBytes: 1000000\nlogging:\n  level: debug\n`);
    await stack.log.waitFor(RELOADED, 2);
    await stack.log.waitFor(NEEDS_RESTART, 2);
    expect(await shown()).toEqual([started[0], started[1], 'the user list']);
  });

  it('substitutes ${NAME} from the environment, and refuses a file naming a variable that is not set', async () => {
    process.env.SVC_CACHE_TEST_TODOS_MAX_AGE = '60';
    try {
      stack = await startFileConfiguredStack(TODOS_ONLY.replace('maxAge: 60', 'maxAge: ${SVC_CACHE_TEST_TODOS_MAX_AGE}'));
      expect(statuses(await twice(stack, TODOS))).toEqual(['MISS', 'HIT']);

      await stack.writeConfig(USERS_ONLY.replace('maxAge: 60', 'maxAge: ${SVC_CACHE_TEST_NOT_SET}'));
      await stack.log.waitFor(REFUSED, 1);
      expect(statuses([await postGraphQL(stack.url, { query: TODOS }), ...(await twice(stack, USERS))])).toEqual([
        'HIT',
        'PASS',
        'PASS',
      ]);
    } finally {
      delete process.env.SVC_CACHE_TEST_TODOS_MAX_AGE;
    }
  });

  it('bounds the persisted-query registry by the apq.maxBytes in force, from the next registration', async () => {
    // A registration counted as 1000 bytes (its hash, its query, REGISTRATION_OVERHEAD_BYTES): two fit in 2000.
    const query = (index: number) => `{ todos { id } } #${String(index).padStart(918 - REGISTRATION_OVERHEAD_BYTES, 'x')}`;
    const register = async (indexes: readonly number[]) => {
      for (const index of indexes) {
        const result = await postGraphQL(stack!.url, { query: query(index), extensions: persistedQueryExtensions(query(index)) });
        expect(result.status).toBe(200);
      }
    };
    const registered = async (): Promise<number[]> => {
      const held: number[] = [];
      for (let index = 0; index < 10; index += 1) {
        const result = await postGraphQL<unknown>(stack!.url, { extensions: persistedQueryExtensions(query(index)) });
        if (result.json?.errors === undefined) held.push(index);
      }
      return held;
    };
    const withApqBound = (maxBytes: number) => `${TODOS_ONLY}apq:\n  maxBytes: ${maxBytes}\n`;

    stack = await startFileConfiguredStack(withApqBound(2000));
    await register([0, 1, 2, 3]);
    await stack.writeConfig(withApqBound(1_000_000));
    await stack.log.waitFor(RELOADED, 1);
    await register([4, 5, 6, 7]);
    expect(await registered()).toEqual([2, 3, 4, 5, 6, 7]);

    await stack.writeConfig(withApqBound(2000));
    await stack.log.waitFor(RELOADED, 2);
    await register([8]);
    expect(await registered()).toEqual([7, 8]);
    expect(stack.log.messages).not.toContain(NEEDS_RESTART);
  });

  // The scope audit: a key taken out of the JWKS file kept verifying tokens, new ones too, until a
  // token named an unknown kid; the file is now followed as schema.file is.
  it('stops verifying with a key taken out of a jwksFile, for tokens verified with it before too', async () => {
    const [kept, removed] = await Promise.all([rsaKey('kept'), rsaKey('removed')]);
    jwksDirectory = await mkdtemp(join(tmpdir(), 'svc-cache-jwks-'));
    const jwksFile = join(jwksDirectory, 'jwks.json');
    const writeJwks = async (keys: readonly SigningKey[]): Promise<void> => {
      await writeFile(`${jwksFile}.new`, JSON.stringify({ keys: keys.map((key) => key.publicJwk) }));
      await rename(`${jwksFile}.new`, jwksFile);
    };
    await writeJwks([kept, removed]);
    const scope = `scopes:\n  USER:\n    definition: header:authorization\n    jwt:\n      claim: sub\n      algorithms: [RS256]\n      audience: api\n      jwksFile: ${jwksFile}\n`;
    stack = await startFileConfiguredStack(configFile('  - types: [Query]\n    maxAge: 60\n    scope: USER\n', scope));
    const bearer = async (key: SigningKey, sub: string) => ({ authorization: `Bearer ${await rsToken(key, { sub, aud: 'api' })}` });
    const alice = await bearer(removed, 'alice');
    expect(statuses(await twice(stack, TIME, alice))).toEqual(['MISS', 'HIT']);

    await writeJwks([kept]);
    await stack.log.waitFor(RELOADED, 1);
    const after = [
      await postGraphQL(stack.url, { query: TIME }, alice),
      await postGraphQL(stack.url, { query: TIME }, await bearer(removed, 'bob')),
      await postGraphQL(stack.url, { query: TIME }, await bearer(kept, 'carol')),
    ];
    expect(statuses(after)).toEqual(['PASS', 'PASS', 'MISS']);
  });

  it('warns of a JWT scope without an audience at start and after each reload that still has one', async () => {
    const rules = '  - types: [Query]\n    maxAge: 60\n';
    stack = await startFileConfiguredStack(configFile(rules, jwtScope('')));
    expect(stack.log.messages.filter((message) => message === CONFIG_WARNING)).toHaveLength(1);

    await stack.writeConfig(configFile(rules, jwtScope('      audience: api\n')));
    await stack.log.waitFor(RELOADED, 1);
    expect(stack.log.messages.filter((message) => message === CONFIG_WARNING)).toHaveLength(1);

    await stack.writeConfig(configFile(rules, jwtScope('')));
    await stack.log.waitFor(RELOADED, 2);
    expect(stack.log.messages.filter((message) => message === CONFIG_WARNING)).toHaveLength(2);
  });
});
