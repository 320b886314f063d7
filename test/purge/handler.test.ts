import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildSchema, type GraphQLSchema } from 'graphql';
import { pino } from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { configSchema, type Config } from '../../src/config/schema.js';
import { parseDocument, selectOperation } from '../../src/graphql/document.js';
import type { GraphQLResponseMediaType } from '../../src/http/accept.js';
import { RepeatedWarning } from '../../src/observability/index.js';
import { silentLogger, type Logger } from '../../src/observability/log.js';
import {
  handlePurgeRequest,
  type PurgeEvent,
  type PurgeRequest,
} from '../../src/purge/index.js';
import { invalidationTag as tag } from '../../src/invalidation/tags.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RedisCommandTimeout } from '../../src/store/redisConnection.js';
import { StoreFull, UnconfirmedInvalidation } from '../../src/store/types.js';
import { demoSchemaSDL } from '../support/origin.js';

/** The purge handler alone, as the engine calls it: a parsed request, a real in-memory store. */

const demoOrigin = buildSchema(demoSchemaSDL);
const TOKEN = 'the-purge-token-of-the-tests';
const OTHER_TOKEN = 'a-second-token';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

/** Cached entries and the tags the response side would have given them. */
const SEEDED: Record<string, string[]> = {
  todos: [tag.query('todos'), tag.list('Todo'), tag.type('Todo'), tag.entity('Todo', '1'), tag.entity('Todo', '2'), tag.type('User'), tag.entity('User', 'u1')],
  todo1: [tag.query('todo'), tag.type('Todo'), tag.entity('Todo', '1')],
  user2: [tag.query('user'), tag.type('User'), tag.entity('User', 'u2')],
  products: [tag.query('products'), tag.list('Product'), tag.type('Product'), tag.entity('Product', 'sku-1'), tag.entity('Product', 'sku-2')],
  product2: [tag.query('product'), tag.type('Product'), tag.entity('Product', 'sku-2')],
  namedTime: [tag.query('time'), tag.operation('TimeNow')],
};

function config(purge: Record<string, unknown> = { tokens: [TOKEN, OTHER_TOKEN] }): Config {
  return configSchema.parse({
    origin: { url: 'http://origin.test/graphql' },
    keyFields: { defaults: ['id', '_id'], types: { Product: ['sku'] } },
    purge,
  });
}

interface RequestOptions {
  variables?: Record<string, unknown>;
  operationName?: string;
  headers?: Array<[string, string]>;
  token?: string | null;
  mediaType?: GraphQLResponseMediaType;
}

/** A request as the engine hands it over: parsed, its operation selected. */
function purgeRequest(query: string, options: RequestOptions = {}): PurgeRequest {
  const parsed = parseDocument(query);
  if ('kind' in parsed) throw new Error(parsed.message);
  const selected = selectOperation(parsed, options.operationName);
  if (selected.kind === 'invalid') throw new Error(selected.reason);
  const token = options.token === undefined ? TOKEN : options.token;
  return {
    document: selected.document,
    operation: selected.operation,
    operationName: options.operationName,
    variables: options.variables ?? {},
    headers: [['content-type', 'application/json'], ...(token === null ? [] : [['svc-purge-token', token] as [string, string]]), ...(options.headers ?? [])],
    responseMediaType: options.mediaType ?? GRAPHQL_RESPONSE,
  };
}

describe('handlePurgeRequest', () => {
  let store: MemoryStore;
  let events: PurgeEvent[];
  let current: Config;
  let originSchema: GraphQLSchema;
  let logger: Logger;
  let confirmationMs: number | undefined;

  beforeEach(async () => {
    confirmationMs = undefined;
    store = new MemoryStore({ maxBytes: 1024 * 1024 });
    events = [];
    current = config();
    originSchema = demoOrigin;
    logger = silentLogger();
    for (const [key, tags] of Object.entries(SEEDED)) {
      const { mark } = await store.lookup(key);
      const body = Buffer.from(`{"data":{"key":"${key}"}}`);
      const stored = await store.store(
        key,
        { body, encoding: 'identity', identityLength: body.length, contentType: 'application/json', headers: [], storedAt: Date.now(), maxAge: 60, swr: 60, staleIfError: 0 },
        { tags, ttlSeconds: 120, mark },
      );
      expect(stored).toBe(true);
    }
  });

  const purge = (query: string, options?: RequestOptions) =>
    handlePurgeRequest(purgeRequest(query, options), {
      originSchema,
      config: current,
      store,
      logger,
      refusals: new RepeatedWarning(logger, 'purge refused'),
      onPurge: (event) => events.push(event),
      confirmationMs,
    });

  /** The seeded entries still fresh (held and within max-age): soft purges leave entries held but stale. */
  async function fresh(): Promise<string[]> {
    const held: string[] = [];
    for (const key of Object.keys(SEEDED)) {
      const { entry } = await store.lookup(key);
      if (entry && Date.now() - entry.storedAt <= entry.maxAge * 1000) held.push(key);
    }
    return held;
  }

  async function remaining(): Promise<string[]> {
    const held: string[] = [];
    for (const key of Object.keys(SEEDED)) if ((await store.lookup(key)).entry) held.push(key);
    return held;
  }

  const everyKeyBut = (...gone: string[]) => Object.keys(SEEDED).filter((key) => !gone.includes(key));

  async function expectAnswer(query: string, data: Record<string, unknown>, options?: RequestOptions): Promise<void> {
    const response = await purge(query, options);
    expect(response?.status).toBe(200);
    expect(response?.body.toString()).toBe(JSON.stringify({ data }));
  }

  describe('purge fields', () => {
    it('_purge<Type> clears every entry holding the type and answers exactly true', async () => {
      const response = await purge('mutation { _purgeTodo }');
      expect(response).toEqual({
        status: 200,
        headers: [
          ['content-type', 'application/graphql-response+json; charset=utf-8'],
          ['svc-cache', 'PASS'],
        ],
        body: Buffer.from('{"data":{"_purgeTodo":true}}'),
      });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
    });

    it('purge<Type> takes one key value or a list of them', async () => {
      await expectAnswer('mutation { purgeTodo(id: "1") }', { purgeTodo: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
      await expectAnswer('mutation { purgeUser(id: ["u2", "nobody"]) }', { purgeUser: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1', 'user2'));
    });

    it('purge<Type> and _purgeType by key also clear answers holding objects of the type without their key', async () => {
      // An answer to a stored document that selects no key (README, Stored documents sent by id).
      const storeUnkeyedUsers = async () => {
        const { mark } = await store.lookup('userNames');
        const body = Buffer.from('{"data":{"users":[{"name":"Ann"}]}}');
        const entry = { body, encoding: 'identity' as const, identityLength: body.length, contentType: 'application/json', headers: [], storedAt: Date.now(), maxAge: 60, swr: 60, staleIfError: 0 };
        await store.store('userNames', entry, { tags: [tag.query('users'), tag.list('User'), tag.type('User'), tag.unkeyed('User')], ttlSeconds: 120, mark });
      };
      const held = async () => (await store.lookup('userNames')).entry !== undefined;
      await storeUnkeyedUsers();
      for (const other of ['purgeTodo(id: "1")', 'purgeUser(id: [])', '_purgeOperationName(names: ["TimeNow"])']) {
        await purge(`mutation { ${other} }`);
        expect(await held()).toBe(true);
      }
      await expectAnswer('mutation { purgeUser(id: "u9") }', { purgeUser: true });
      expect(await held()).toBe(false);
      await storeUnkeyedUsers();
      await expectAnswer('mutation { _purgeType(type: "User", keyFields: [{ name: "id", value: "u9" }]) }', { _purgeType: true });
      expect(await held()).toBe(false);
    });

    it('purge<Type> coerces ID values as GraphQL does and accepts variables', async () => {
      const query = 'mutation Purge($ids: [ID!]) { purgeTodo(id: $ids) }';
      await expectAnswer(query, { purgeTodo: true }, { variables: { ids: [2] } });
      expect(await remaining()).toEqual(everyKeyBut('todos'));
      await expectAnswer('mutation { purgeTodo(id: 1) }', { purgeTodo: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
    });

    it('purge<Type> without its key argument purges the whole type; an empty list purges nothing', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      await expectAnswer('mutation { purgeProduct(sku: []) }', { purgeProduct: true });
      expect(invalidate).not.toHaveBeenCalled();
      expect(await remaining()).toEqual(everyKeyBut());
      await expectAnswer('mutation { purgeProduct }', { purgeProduct: true });
      expect(await remaining()).toEqual(everyKeyBut('products', 'product2'));
    });

    it('answers a key argument written as null, or as a variable left unset, as a request error, purging nothing', async () => {
      const cases: Array<[string, Record<string, unknown> | undefined, string]> = [
        ['mutation { purgeTodo(id: null) }', undefined, 'purgeTodo: id is null; leave id out to purge every Todo'],
        ['mutation Purge($ids: [ID!]) { purgeTodo(id: $ids) }', {}, 'purgeTodo: id is null; leave id out to purge every Todo'],
        ['mutation Purge($skus: [String!]) { purgeProduct(sku: $skus) }', { skus: null }, 'purgeProduct: sku is null; leave sku out to purge every Product'],
        ['mutation { _purgeType(type: "Todo", keyFields: null) }', undefined, '_purgeType: keyFields is null; leave keyFields out to purge every Todo'],
      ];
      for (const [query, variables, message] of cases) {
        const response = await purge(query, variables === undefined ? {} : { variables });
        expect(response?.status).toBe(400);
        expect(JSON.parse(response!.body.toString())).toEqual({ errors: [{ message, extensions: { code: 'BAD_USER_INPUT' } }] });
      }
      expect(await remaining()).toEqual(everyKeyBut());
    });

    it('purgeProduct is keyed by sku, and an id argument is a validation error', async () => {
      await expectAnswer('mutation { purgeProduct(sku: "sku-2") }', { purgeProduct: true });
      expect(await remaining()).toEqual(everyKeyBut('products', 'product2'));
      const rejected = await purge('mutation { purgeUser(id: "u2") purgeProduct(id: "sku-1") }');
      expect(rejected?.status).toBe(400);
      expect(JSON.parse(rejected!.body.toString())).toEqual({
        errors: [{ message: 'Unknown argument "id" on field "Mutation.purgeProduct".' }],
      });
      expect(await remaining()).toEqual(everyKeyBut('products', 'product2'));
    });

    it('_purgeQuery clears the results of queries selecting those root fields', async () => {
      await expectAnswer('mutation { _purgeQuery(queries: [todo, user]) }', { _purgeQuery: true });
      expect(await remaining()).toEqual(everyKeyBut('todo1', 'user2'));
      await expectAnswer('mutation { _purgeQuery(queries: products) }', { _purgeQuery: true });
      expect(await remaining()).toEqual(everyKeyBut('todo1', 'user2', 'products'));
    });

    it('_purgeQuery with an unknown field or a string is a validation error', async () => {
      const unknown = await purge('mutation { _purgeQuery(queries: [todoz]) }');
      expect(unknown?.status).toBe(400);
      expect(JSON.parse(unknown!.body.toString())).toEqual({
        errors: [{ message: 'Value "todoz" does not exist in "QueryField" enum. Did you mean the enum value "todo", "todos", or "node"?' }],
      });
      const quoted = await purge('mutation { _purgeQuery(queries: ["todos"]) }');
      expect(JSON.parse(quoted!.body.toString()).errors[0].message).toBe(
        'Enum "QueryField" cannot represent non-enum value: "todos". Did you mean the enum value "todos" or "todo"?',
      );
      expect(await remaining()).toEqual(everyKeyBut());
    });

    it('_purgeOperationName clears the results of operations with those names', async () => {
      await expectAnswer('mutation { _purgeOperationName(names: ["TimeNow", "Unknown"]) }', { _purgeOperationName: true });
      expect(await remaining()).toEqual(everyKeyBut('namedTime'));
    });

    it('_purgeAll clears everything with one invalidateAll', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      const invalidateAll = vi.spyOn(store, 'invalidateAll');
      await expectAnswer('mutation { _purgeAll _purgeTodo }', { _purgeAll: true, _purgeTodo: true });
      expect(await remaining()).toEqual([]);
      expect(invalidateAll).toHaveBeenCalledTimes(1);
      expect(invalidate).not.toHaveBeenCalled();
      expect(events).toEqual([
        {
          result: 'purged',
          removedEntries: 6,
          staleEntries: 0,
          fields: ['_purgeAll', '_purgeTodo'],
          everything: true,
          tags: [tag.type('Todo')],
          soft: { everything: false, tags: [] },
        },
      ]);
    });

    it('applies several purge fields, aliases and fragments with one invalidate call', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      const query = `mutation Purge {
        first: purgeTodo(id: "1")
        second: purgeTodo(id: "1")
        ...More
        __typename
      }
      fragment More on Mutation { _purgeOperationName(names: ["TimeNow"]) ... on Mutation { purgeUser(id: "u2") } }`;
      await expectAnswer(
        query,
        { first: true, second: true, _purgeOperationName: true, purgeUser: true, __typename: 'Mutation' },
        { operationName: 'Purge' },
      );
      expect(invalidate).toHaveBeenCalledTimes(1);
      expect(invalidate).toHaveBeenCalledWith([tag.entity('Todo', '1'), tag.unkeyed('Todo'), tag.operation('TimeNow'), tag.entity('User', 'u2'), tag.unkeyed('User')]);
      expect(await remaining()).toEqual(['products', 'product2']);
      expect(events).toEqual([
        {
          result: 'purged',
          removedEntries: 4,
          staleEntries: 0,
          fields: ['purgeTodo', 'purgeTodo', '_purgeOperationName', 'purgeUser'],
          everything: false,
          tags: [tag.entity('Todo', '1'), tag.unkeyed('Todo'), tag.operation('TimeNow'), tag.entity('User', 'u2'), tag.unkeyed('User')],
          soft: { everything: false, tags: [] },
        },
      ]);
    });

    it('skips a field that @skip leaves out', async () => {
      await expectAnswer('mutation { _purgeTodo @skip(if: true) _purgeUser }', { _purgeUser: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'user2'));
    });

    /** Has the handler log at info into the returned lines, one parsed object each. */
    function logAtInfo(): Array<Record<string, unknown>> {
      const lines: Array<Record<string, unknown>> = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      });
      logger = pino({ level: 'info' }, sink);
      return lines;
    }

    it('logs each purge at info with what it cleared', async () => {
      const lines = logAtInfo();
      await purge('mutation { purgeTodo(id: "1") }');
      await new Promise((resolve) => setImmediate(resolve));
      expect(lines).toMatchObject([
        {
          level: 30,
          msg: 'purge applied',
          fields: ['purgeTodo'],
          everything: false,
          tagCount: 2,
          tags: [tag.entity('Todo', '1'), tag.unkeyed('Todo')],
          removedEntries: 2,
        },
      ]);
    });

    // The admin-surface audit: `_purgeType(type: $t)` with a 500,000-character value logged one 500 KB line.
    it('logs a rejected purge with each message cut to 100 characters', async () => {
      const lines = logAtInfo();
      const type = 'Z'.repeat(500_000);
      await purge('mutation($t: String!) { _purgeType(type: $t) }', { variables: { t: type } });
      const rejected = lines.find((line) => line.msg === 'purge request rejected');
      expect(JSON.stringify(rejected).length).toBeLessThan(1000);
      expect((rejected?.errors as string[])[0]).toMatch(/…\[\+\d+\]$/);
    });

    it('logs a long name as its tag spells it, by a hash', async () => {
      const lines = logAtInfo();
      const name = `Op${'x'.repeat(99_000)}`;
      await purge(`mutation { _purgeOperationName(names: ["${name}"]) }`);
      await new Promise((resolve) => setImmediate(resolve));
      expect(tag.operation(name)).toMatch(/^o:#[\w-]{43}$/);
      expect(lines).toMatchObject([{ msg: 'purge applied', tagCount: 1, tags: [tag.operation(name)] }]);
    });
  });

  describe('soft purges', () => {
    it('soft: true marks what the field names stale instead of removing it', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      const markStale = vi.spyOn(store, 'markStale');
      await expectAnswer('mutation { purgeTodo(id: "1", soft: true) }', { purgeTodo: true });
      expect(await remaining()).toEqual(everyKeyBut());
      expect(await fresh()).toEqual(everyKeyBut('todos', 'todo1'));
      expect(markStale).toHaveBeenCalledExactlyOnceWith([tag.entity('Todo', '1'), tag.unkeyed('Todo')]);
      expect(invalidate).not.toHaveBeenCalled();
      expect(events).toEqual([
        {
          result: 'purged',
          removedEntries: 0,
          staleEntries: 2,
          fields: ['purgeTodo'],
          everything: false,
          tags: [],
          soft: { everything: false, tags: [tag.entity('Todo', '1'), tag.unkeyed('Todo')] },
        },
      ]);
    });

    it('every purge field takes soft, false by default and when null', async () => {
      await expectAnswer('mutation { _purgeOperationName(names: ["TimeNow"], soft: null) }', { _purgeOperationName: true });
      expect(await remaining()).toEqual(everyKeyBut('namedTime'));
      const query = `mutation($soft: Boolean) {
        _purgeUser(soft: $soft) _purgeQuery(queries: [products], soft: $soft) purgeTodo(soft: $soft)
      }`;
      await expectAnswer(query, { _purgeUser: true, _purgeQuery: true, purgeTodo: true }, { variables: { soft: true } });
      expect(await remaining()).toEqual(everyKeyBut('namedTime'));
      expect(await fresh()).toEqual(['product2']);
    });

    // The Redis failure audit: a full Redis refuses a soft purge's record, and the purge answered 503
    // until Redis had room, its entries fresh HITs meanwhile.
    it('removes what a soft purge names when the store is full, counted as removed', async () => {
      vi.spyOn(store, 'markStale').mockRejectedValue(new StoreFull("OOM command not allowed when used memory > 'maxmemory'."));
      vi.spyOn(store, 'markAllStale').mockRejectedValue(new StoreFull("OOM command not allowed when used memory > 'maxmemory'."));
      await expectAnswer('mutation { purgeTodo(id: "1", soft: true) }', { purgeTodo: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
      await expectAnswer('mutation { _purgeAll(soft: true) }', { _purgeAll: true });
      expect(await remaining()).toEqual([]);
      expect(events).toMatchObject([
        { result: 'purged', removedEntries: 2, staleEntries: 0 },
        { result: 'purged', removedEntries: Object.keys(SEEDED).length - 2, staleEntries: 0 },
      ]);
    });

    it('applies hard and soft fields of one mutation with one call each, a tag named both ways hard', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      const markStale = vi.spyOn(store, 'markStale');
      await expectAnswer('mutation { _purgeTodo(soft: true) softly: _purgeUser(soft: true) purgeUser(id: "u2") _purgeUser }', {
        _purgeTodo: true,
        softly: true,
        purgeUser: true,
        _purgeUser: true,
      });
      expect(invalidate).toHaveBeenCalledExactlyOnceWith([tag.entity('User', 'u2'), tag.unkeyed('User'), tag.type('User')]);
      expect(markStale).toHaveBeenCalledExactlyOnceWith([tag.type('Todo')]);
      expect(await remaining()).toEqual(everyKeyBut('user2', 'todos'));
      expect(await fresh()).toEqual(everyKeyBut('user2', 'todos', 'todo1'));
    });

    it('_purgeAll(soft: true) marks everything stale with one markAllStale; a hard _purgeAll wins', async () => {
      const markAllStale = vi.spyOn(store, 'markAllStale');
      await expectAnswer('mutation { _purgeAll(soft: true) _purgeTodo }', { _purgeAll: true, _purgeTodo: true });
      expect(markAllStale).toHaveBeenCalledTimes(1);
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
      expect(await fresh()).toEqual([]);
      await expectAnswer('mutation { _purgeAll _purgeUser(soft: true) }', { _purgeAll: true, _purgeUser: true });
      expect(markAllStale).toHaveBeenCalledTimes(1);
      expect(await remaining()).toEqual([]);
    });
  });

  describe('_purgeType, schemaless', () => {
    it('purges a type, or the objects whose key field has one of the values', async () => {
      await expectAnswer('mutation { _purgeType(type: "Todo") }', { _purgeType: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
      const bySku = 'mutation { _purgeType(type: "Product", keyFields: [{ name: "sku", value: "sku-2" }, { name: "sku", value: "sku-9" }]) }';
      await expectAnswer(bySku, { _purgeType: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1', 'products', 'product2'));
      await expectAnswer('mutation { _purgeType(type: "User", keyFields: [{ name: "id", value: "u2" }], soft: true) }', { _purgeType: true });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1', 'products', 'product2'));
      expect(await fresh()).toEqual(['namedTime']);
    });

    it('names a number-literal value by the tag of that number too, however the origin spelt it', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      const byValue = (value: string) => `mutation { _purgeType(type: "User", keyFields: [{ name: "id", value: "${value}" }]) purgeUser(id: "${value}") }`;
      await expectAnswer(byValue('1.0'), { _purgeType: true, purgeUser: true });
      await expectAnswer(byValue('9007199254740993'), { _purgeType: true, purgeUser: true });
      await expectAnswer(byValue('u2'), { _purgeType: true, purgeUser: true });
      expect(invalidate.mock.calls.map(([tags]) => [...new Set(tags)])).toEqual([
        [tag.entity('User', '1.0'), tag.entity('User', '1'), tag.unkeyed('User')],
        [tag.entity('User', '9007199254740993'), tag.entity('User', '9007199254740992'), tag.unkeyed('User')],
        [tag.entity('User', 'u2'), tag.unkeyed('User')],
      ]);
    });

    it('answers an unknown type or a field that is not the key as a request error, purging nothing', async () => {
      const cases: Array<[string, string]> = [
        ['mutation { _purgeTodo _purgeType(type: "Nope") }', '_purgeType: "Nope" is not an object type of the origin schema'],
        ['mutation { _purgeType(type: "Query") }', '_purgeType: "Query" is not an object type of the origin schema'],
        [
          'mutation { _purgeType(type: "Product", keyFields: [{ name: "id", value: "sku-1" }]) }',
          '_purgeType: Product is identified by "sku", not by "id"',
        ],
      ];
      for (const [query, message] of cases) {
        const response = await purge(query);
        expect(response?.status).toBe(400);
        expect(JSON.parse(response!.body.toString())).toEqual({ errors: [{ message, extensions: { code: 'BAD_USER_INPUT' } }] });
        const lenient = await purge(query, { mediaType: 'application/json' });
        expect(lenient?.status).toBe(200);
      }
      expect(await remaining()).toEqual(everyKeyBut());
      expect(events.map((event) => event.result)).toEqual(['invalid', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid']);
      const missingKey = await purge('mutation { _purgeType(type: "Todo", keyFields: [{ name: "id" }]) }');
      expect(JSON.parse(missingKey!.body.toString()).errors[0].message).toBe(
        'Field "KeyFieldInput.value" of required type "String!" was not provided.',
      );
    });
  });

  describe('request errors', () => {
    it('answers validation errors with 400 under application/graphql-response+json and 200 under application/json', async () => {
      const query = 'mutation { _purgeTodo(id: "1") }';
      const expected = { errors: [{ message: 'Unknown argument "id" on field "Mutation._purgeTodo".' }] };
      const strict = await purge(query);
      expect(strict?.status).toBe(400);
      expect(JSON.parse(strict!.body.toString())).toEqual(expected);
      const legacy = await purge(query, { mediaType: 'application/json' });
      expect(legacy?.status).toBe(200);
      expect(legacy?.headers[0]).toEqual(['content-type', 'application/json; charset=utf-8']);
      expect(JSON.parse(legacy!.body.toString())).toEqual(expected);
      expect(events).toEqual([{ result: 'invalid' }, { result: 'invalid' }]);
      expect(await remaining()).toEqual(everyKeyBut());
    });

    it('answers a chain of 20,000 spreads, more than graphql can validate, as a request error and purges nothing', async () => {
      const chain = Array.from({ length: 20_000 }, (_, i) => `fragment F${i} on Mutation { ...F${i + 1} }`).join(' ');
      const response = await purge(`mutation { ...F0 } ${chain} fragment F20000 on Mutation { _purgeAll }`);
      expect(response?.status).toBe(400);
      expect(JSON.parse(response!.body.toString())).toEqual({ errors: [{ message: 'The document spreads its fragments too deeply to validate' }] });
      expect(events).toEqual([{ result: 'invalid' }]);
      expect(await remaining()).toEqual(everyKeyBut());
    });

    it('answers a variable that cannot be coerced as a request error and purges nothing', async () => {
      const response = await purge('mutation ($ids: [ID!]) { purgeTodo(id: $ids) }', { variables: { ids: [null] } });
      expect(response?.status).toBe(400);
      expect(JSON.parse(response!.body.toString()).data).toBeUndefined();
      expect(await remaining()).toEqual(everyKeyBut());
    });
  });

  describe('token', () => {
    const refused = (message = 'Missing or invalid purge token in the svc-purge-token header') => ({
      status: 401,
      headers: [
        ['content-type', 'application/graphql-response+json; charset=utf-8'],
        ['svc-cache', 'PASS'],
        ['www-authenticate', 'SvcPurgeToken realm="svc-cache purge", header="svc-purge-token"'],
      ],
      body: Buffer.from(JSON.stringify({ errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] })),
    });

    it.each([
      ['no token', null],
      ['an empty token', ''],
      ['a wrong token of the same length', TOKEN.replace(/.$/, 'X')],
      ['a prefix of the token', TOKEN.slice(0, -1)],
      ['the token with a character more', `${TOKEN}x`],
    ])('refuses %s with 401 and purges nothing', async (_case, token) => {
      const invalidate = vi.spyOn(store, 'invalidate');
      expect(await purge('mutation { _purgeTodo }', { token })).toEqual(refused());
      expect(invalidate).not.toHaveBeenCalled();
      expect(await remaining()).toEqual(everyKeyBut());
      expect(events).toEqual([{ result: 'unauthorized' }]);
    });

    it('accepts any of the configured tokens', async () => {
      await expectAnswer('mutation { _purgeTodo }', { _purgeTodo: true }, { token: OTHER_TOKEN });
      expect(await remaining()).toEqual(everyKeyBut('todos', 'todo1'));
    });

    it('refuses a token repeated in two header fields', async () => {
      const response = await purge('mutation { _purgeTodo }', { headers: [['svc-purge-token', TOKEN]] });
      expect(response?.status).toBe(401);
    });

    it('reads the configured header, whatever the case it is configured in', async () => {
      current = config({ tokens: [TOKEN], header: 'X-Purge-Key' });
      expect((await purge('mutation { _purgeTodo }'))?.status).toBe(401);
      await expectAnswer('mutation { _purgeTodo }', { _purgeTodo: true }, { token: null, headers: [['x-purge-key', TOKEN]] });
    });

    it('refuses every purge when no tokens are configured', async () => {
      current = config({ tokens: [] });
      expect(await purge('mutation { _purgeAll }')).toEqual(refused('Purging is disabled: no purge tokens are configured'));
      expect(await purge('mutation { _purgeAll }', { token: '' })).toEqual(
        refused('Purging is disabled: no purge tokens are configured'),
      );
      expect(await remaining()).toEqual(everyKeyBut());
    });
  });

  describe('store failures', () => {
    it('answers 503 with an error and no data when the store rejects, never true', async () => {
      vi.spyOn(store, 'invalidate').mockRejectedValue(new Error('redis down'));
      for (const mediaType of [GRAPHQL_RESPONSE, 'application/json'] as const) {
        const response = await purge('mutation { _purgeTodo purgeUser(id: "u2") }', { mediaType });
        expect(response?.status).toBe(503);
        expect(JSON.parse(response!.body.toString())).toEqual({
          errors: [
            {
              message: 'The purge was not applied: the cache store did not confirm it. Retry the purge.',
              extensions: { code: 'PURGE_NOT_APPLIED' },
            },
          ],
        });
        expect(response!.body.toString()).not.toContain('true');
      }
      expect(events[0]).toEqual({
        result: 'store-failed',
        error: 'redis down',
        fields: ['_purgeTodo', 'purgeUser'],
        everything: false,
        tags: [tag.type('Todo'), tag.entity('User', 'u2'), tag.unkeyed('User')],
        soft: { everything: false, tags: [] },
      });
    });

    // The admin-surface audit: Redis paused past commandTimeoutMs, the purge answered 503 and was
    // reported failed ("nothing promised"), then ran once Redis resumed.
    it('reports a purge whose store command timed out as not confirmed, not failed: it may have run', async () => {
      vi.spyOn(store, 'invalidate').mockRejectedValue(new RedisCommandTimeout('redis invalidation timed out after 250 ms'));
      const response = await purge('mutation { purgeUser(id: "u2") }');
      expect(response?.status).toBe(503);
      expect(JSON.parse(response!.body.toString()).errors[0].extensions).toEqual({ code: 'PURGE_NOT_APPLIED' });
      expect(events).toEqual([{ result: 'not-confirmed', awaited: 'store', fields: ['purgeUser'], everything: false, tags: [tag.entity('User', 'u2'), tag.unkeyed('User')], soft: { everything: false, tags: [] } }]);
    });

    it('answers 503 when the store does not confirm within confirmationMs, before Envoy would forward the purge, and the purge goes on', async () => {
      // Envoy waits at most 5 s more for the answer (max_message_timeout), then forwards the purge
      // to the origin: a purge of 60,000 ids took longer against a real Redis.
      confirmationMs = 50;
      const invalidate = store.invalidate.bind(store);
      let confirmed = false;
      vi.spyOn(store, 'invalidate').mockImplementation(async (tags) => {
        await sleep(300);
        const removed = await invalidate(tags);
        confirmed = true;
        return removed;
      });
      const response = await purge('mutation { purgeUser(id: "u2") }');
      expect(confirmed).toBe(false);
      expect(response?.status).toBe(503);
      expect(JSON.parse(response!.body.toString()).errors[0].extensions).toEqual({ code: 'PURGE_NOT_APPLIED' });
      expect(events).toMatchObject([{ result: 'not-confirmed', awaited: 'store', tags: [tag.entity('User', 'u2'), tag.unkeyed('User')] }]);
      expect(await remaining()).toContain('user2');
      await vi.waitFor(async () => expect(await remaining()).not.toContain('user2'), { timeout: 2000, interval: 50 });
    });

    it('answers 503 and reports not-confirmed when Redis applied the purge but a replica-local cache did not confirm it', async () => {
      vi.spyOn(store, 'invalidate').mockRejectedValue(new UnconfirmedInvalidation('applied in Redis, but not confirmed by every replica-local cache'));
      const response = await purge('mutation { purgeUser(id: "u2") }');
      expect(response?.status).toBe(503);
      expect(JSON.parse(response!.body.toString()).errors[0].extensions).toEqual({ code: 'PURGE_NOT_APPLIED' });
      expect(events).toMatchObject([{ result: 'not-confirmed', awaited: 'replica-local-caches', tags: [tag.entity('User', 'u2'), tag.unkeyed('User')] }]);
    });

    it('answers 503 when invalidateAll rejects', async () => {
      vi.spyOn(store, 'invalidateAll').mockRejectedValue(new Error('redis down'));
      const response = await purge('mutation { _purgeAll }');
      expect(response?.status).toBe(503);
      expect(response!.body.toString()).not.toContain('true');
    });
  });

  describe('what is not a purge', () => {
    it('lets an origin mutation whose name a purge field would have go to the origin', async () => {
      originSchema = buildSchema(`${demoSchemaSDL}\nextend type Mutation { purgeTodo(id: ID!): Todo }`);
      const invalidate = vi.spyOn(store, 'invalidate');
      expect(await purge('mutation { purgeTodo(id: "1") { id } }')).toBeUndefined();
      expect(await purge('mutation { purgeTodo(id: "1") { id } }', { token: null })).toBeUndefined();
      expect(invalidate).not.toHaveBeenCalled();
      await expectAnswer('mutation { _purgeTodo }', { _purgeTodo: true });
    });

    it('lets a mutation mixing purge and origin fields go to the origin untouched', async () => {
      const invalidate = vi.spyOn(store, 'invalidate');
      expect(await purge('mutation { _purgeTodo addTodo(title: "x") { id } }')).toBeUndefined();
      expect(await purge('mutation { _purgeTodo ...Add } fragment Add on Mutation { addTodo(title: "x") { id } }')).toBeUndefined();
      expect(await purge('mutation { _purgeTodo addTodo(title: "x") { id } }', { token: null })).toBeUndefined();
      expect(invalidate).not.toHaveBeenCalled();
      expect(events).toEqual([]);
    });

    it('lets origin mutations, queries and a bare __typename mutation go to the origin', async () => {
      expect(await purge('mutation { addTodo(title: "x") { id } }')).toBeUndefined();
      expect(await purge('mutation { __typename }')).toBeUndefined();
      expect(await purge('{ todos { id } }')).toBeUndefined();
      expect(await purge('{ todos { id } __typename }')).toBeUndefined();
      expect(await purge('subscription { _purgeAll }')).toBeUndefined();
      expect(await remaining()).toEqual(everyKeyBut());
    });
  });

  describe('introspection', () => {
    const introspection = '{ __schema { queryType { name } } __type(name: "Mutation") { fields { name } } }';

    it('answers introspection carrying a valid purge token from the purge schema', async () => {
      const response = await purge(introspection);
      expect(response?.status).toBe(200);
      const { data } = JSON.parse(response!.body.toString());
      expect(data.__schema).toEqual({ queryType: { name: 'Query' } });
      expect(data.__type.fields.map((field: { name: string }) => field.name)).toEqual([
        '_purgeAll',
        '_purgeQuery',
        '_purgeOperationName',
        '_purgeType',
        '_purgeProduct',
        'purgeProduct',
        '_purgeTodo',
        'purgeTodo',
        '_purgeUser',
        'purgeUser',
      ]);
      await expectAnswer('query Api { _purgeApi __typename }', { _purgeApi: true, __typename: 'Query' });
      expect(events).toEqual([]);
    });

    it('leaves introspection without the purge-token header to the origin', async () => {
      expect(await purge(introspection, { token: null })).toBeUndefined();
    });

    it('refuses introspection with a wrong token', async () => {
      expect((await purge(introspection, { token: 'wrong' }))?.status).toBe(401);
    });

    it('leaves a query for origin fields to the origin even with the token', async () => {
      expect(await purge('{ __schema { queryType { name } } todos { id } }')).toBeUndefined();
    });
  });
});
