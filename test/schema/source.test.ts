import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSchema, graphql, isObjectType, type GraphQLSchema } from 'graphql';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { configSchema, type Config } from '../../src/config/index.js';
import { createSchemaSource, type SchemaSource } from '../../src/schema/index.js';

const ORIGIN_SDL = `
  type Query { todos: [Todo!]! me: User }
  type Todo { id: ID! title: String! done: Boolean! }
  type User { id: ID! email: String! }
`;

interface LogLine {
  level: number;
  msg: string;
}

const WARN = 40;
const ERROR = 50;

let directory: string;
let source: SchemaSource | undefined;
const servers: Server[] = [];

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'svc-cache-schema-'));
});

afterEach(async () => {
  source?.close();
  source = undefined;
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(directory, { recursive: true, force: true });
});

function capturingLogger() {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

function config(input: Record<string, unknown>): Config {
  return configSchema.parse({ rules: [{ types: ['Query'], maxAge: 60 }], ...input });
}

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void | Promise<void>;

/** A GraphQL origin over real HTTP, answering with graphql-js itself. */
function serveSchema(schema: GraphQLSchema): Handler {
  return async (_request, response, body) => {
    const { query, variables, operationName } = JSON.parse(body) as { query: string; variables?: Record<string, unknown>; operationName?: string };
    const result = await graphql({ schema, source: query, variableValues: variables, operationName });
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  };
}

async function startOrigin(handler: Handler, port = 0): Promise<string> {
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => void handler(request, response, body));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
}

/** A port nothing listens on yet, for an origin that starts late. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function typeNames(schema: GraphQLSchema | undefined): string[] {
  return Object.keys(schema?.getTypeMap() ?? {}).filter((name) => !name.startsWith('__')).sort();
}

describe('schema from schema.file', () => {
  it('loads the SDL file', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, ORIGIN_SDL);
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file } }), logger);
    expect(source.unavailableReason()).toBe(`not loaded yet: reading ${file}`);
    await source.ready;
    expect(typeNames(source.current())).toEqual(['Boolean', 'ID', 'Query', 'String', 'Todo', 'User']);
    expect(source.unavailableReason()).toBeUndefined();
    expect(lines.map((line) => line.msg)).toEqual([`origin schema loaded from ${file}`]);
  });

  it('tells onLoaded of each schema put in use, with the configuration it was loaded for', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, ORIGIN_SDL);
    const loaded: Array<[GraphQLSchema, Config]> = [];
    const first = config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file } });
    source = createSchemaSource(first, capturingLogger().logger, { onLoaded: (schema, forConfig) => loaded.push([schema, forConfig]) });
    await source.ready;
    expect(loaded).toEqual([[source.current(), first]]);
  });

  it('explains a syntax error with the file, line and column', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, 'type Query {\n  todos: [Todo!\n}\n');
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file } }), logger);
    const reason = `schema file ${file}: line 3, column 1: Syntax Error: Expected "]", found "}".`;
    await eventually(() => expect(source?.unavailableReason()).toBe(reason));
    expect(source.current()).toBeUndefined();
    expect(lines).toEqual([expect.objectContaining({ level: ERROR, msg: `origin schema not available: ${reason}` })]);
  });

  it('explains every invalid definition with its line', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, 'type Query {\n  todos: [Todo!]!\n  me: Usr\n}\ntype Todo { id: ID! }\ntype Todo { title: String }\n');
    const { logger } = capturingLogger();
    source = createSchemaSource(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file } }), logger);
    await eventually(() =>
      expect(source?.unavailableReason()).toBe(
        `schema file ${file}: line 3, column 7: Unknown type "Usr".; ` +
          `schema file ${file}: line 5, column 6 and line 6, column 6: There can be only one type named "Todo".`,
      ),
    );
  });

  it('explains a schema without a query type, and a file that does not exist', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, 'type Todo { id: ID! }\n');
    source = createSchemaSource(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file } }), capturingLogger().logger);
    await eventually(() =>
      expect(source?.unavailableReason()).toBe(`schema file ${file}: Query root type must be provided.`),
    );
    source.close();

    const missing = join(directory, 'missing.graphql');
    source = createSchemaSource(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file: missing } }), capturingLogger().logger);
    await eventually(() =>
      expect(source?.unavailableReason()).toBe(`schema file ${missing}: cannot read it: no such file`),
    );
  });
});

describe('schema by introspection of origin.url', () => {
  it('introspects a GraphQL origin over HTTP', async () => {
    const url = await startOrigin(serveSchema(buildSchema(ORIGIN_SDL)));
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url } }), logger);
    expect(source.unavailableReason()).toBe(`not loaded yet: introspecting ${url}`);
    await source.ready;
    expect(typeNames(source.current())).toEqual(['Boolean', 'ID', 'Query', 'String', 'Todo', 'User']);
    const todo = source.current()?.getType('Todo');
    expect(isObjectType(todo) && Object.keys(todo.getFields())).toEqual(['id', 'title', 'done']);
    expect(source.unavailableReason()).toBeUndefined();
    expect(lines.map((line) => line.msg)).toEqual([`origin schema loaded from ${url}`]);
  });

  it('introspects again every refresh interval, and puts the schema in use only when it changed', async () => {
    let served = buildSchema(ORIGIN_SDL);
    let fails = false;
    let answers = 0;
    const url = await startOrigin(async (_request, response, body) => {
      if (fails) return void response.writeHead(503).end();
      // Each answer differs, as an origin's per-request extensions (a cost, a trace) make it, the schema not.
      const { query } = JSON.parse(body) as { query: string };
      const result = await graphql({ schema: served, source: query });
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...result, extensions: { cost: (answers += 1) } }));
    });
    const { logger, lines } = capturingLogger();
    const loaded: GraphQLSchema[] = [];
    source = createSchemaSource(config({ origin: { url } }), logger, { refreshMs: 20, onLoaded: (schema) => loaded.push(schema) });
    await source.ready;
    const first = source.current();
    // Unchanged: the same schema object stays, and what was worked out for it with it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([source.current(), loaded.length]).toEqual([first, 1]);
    // A failed refresh keeps the schema in use.
    fails = true;
    await eventually(() => expect(lines.some((line) => line.level === WARN && line.msg.startsWith('cannot refresh the origin schema, keeping the current one'))).toBe(true));
    expect(source.current()).toBe(first);
    // The origin deployed with a new field: in use at the next refresh.
    served = buildSchema(ORIGIN_SDL.replace('done: Boolean!', 'done: Boolean! priority: Int'));
    fails = false;
    await eventually(() => expect(loaded).toHaveLength(2));
    const todo = source.current()?.getType('Todo');
    expect(isObjectType(todo) && Object.keys(todo.getFields())).toEqual(['id', 'title', 'done', 'priority']);
  });

  it('introspects only once with schema.refreshSeconds 0', async () => {
    let requests = 0;
    const url = await startOrigin((request, response, body) => {
      requests += 1;
      return serveSchema(buildSchema(ORIGIN_SDL))(request, response, body);
    });
    source = createSchemaSource(config({ origin: { url }, schema: { refreshSeconds: 0 } }), capturingLogger().logger);
    await source.ready;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(requests).toBe(1);
  });

  it("says why the schema is not loaded without the values of the origin URL's query, which may hold a key", async () => {
    const port = await freePort();
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url: `http://127.0.0.1:${port}/graphql?api_key=QSECRET` } }), logger, { retryDelaysMs: [10] });
    await eventually(() => expect(lines.length).toBeGreaterThanOrEqual(1));
    expect(source.unavailableReason()).toBe(`cannot reach http://127.0.0.1:${port}/graphql?api_key=[redacted]: connection refused (ECONNREFUSED)`);
    // The `url` field is cleaned by the production logger's serializer (test/ops/logging.test.ts).
    expect(lines.map((line) => line.msg).join('\n')).not.toContain('QSECRET');
  });

  it('retries with backoff until the origin comes up, saying why meanwhile', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/graphql`;
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url } }), logger, { retryDelaysMs: [10, 20, 40] });

    const refused = `cannot reach ${url}: connection refused (ECONNREFUSED)`;
    await eventually(() => expect(lines.length).toBeGreaterThanOrEqual(4));
    expect(source.unavailableReason()).toBe(refused);
    expect(source.current()).toBeUndefined();
    expect(lines.slice(0, 4)).toEqual([
      expect.objectContaining({ level: WARN, msg: `origin schema not available yet: ${refused}; retrying in 10ms` }),
      expect.objectContaining({ level: WARN, msg: `origin schema not available yet: ${refused}; retrying in 20ms` }),
      expect.objectContaining({ level: WARN, msg: `origin schema not available yet: ${refused}; retrying in 40ms` }),
      expect.objectContaining({ level: WARN, msg: `origin schema not available yet: ${refused}; retrying in 40ms` }),
    ]);

    await startOrigin(serveSchema(buildSchema(ORIGIN_SDL)), port);
    await source.ready;
    expect(source.unavailableReason()).toBeUndefined();
    expect(source.current()?.getType('Todo')).toBeDefined();
    expect(lines.at(-1)?.msg).toMatch(new RegExp(`^origin schema loaded from ${url} after \\d+ attempts$`));
  });

  it('says when the origin refuses introspection', async () => {
    const url = await startOrigin((_request, response) => {
      response
        .writeHead(400, { 'content-type': 'application/graphql-response+json' })
        .end(JSON.stringify({ errors: [{ message: 'GraphQL introspection is not allowed' }] }));
    });
    source = createSchemaSource(config({ origin: { url } }), capturingLogger().logger, { retryDelaysMs: [1000] });
    await eventually(() =>
      expect(source?.unavailableReason()).toBe(
        `${url} refused the introspection query (HTTP 400): give svc-cache the origin's SDL in schema.file instead; the origin said: GraphQL introspection is not allowed`,
      ),
    );
  });

  // The new-user audit: graphql-js's NoSchemaIntrospectionCustomRule refuses each introspection
  // field, and forty copies of its message came before the hint in /readyz and every log line.
  it('gives the hint first, and the origin\'s messages each once, the first three', async () => {
    const refusals = ['__schema', '__type', 'kind', 'name', 'fields'].flatMap((field) => [1, 2, 3].map(() => ({ message: `introspection disabled: field "${field}"` })));
    const url = await startOrigin((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: refusals }));
    });
    source = createSchemaSource(config({ origin: { url } }), capturingLogger().logger, { retryDelaysMs: [1000] });
    await eventually(() =>
      expect(source?.unavailableReason()).toBe(
        `${url} refused the introspection query (HTTP 400): give svc-cache the origin's SDL in schema.file instead; the origin said: ` +
          'introspection disabled: field "__schema"; introspection disabled: field "__type"; introspection disabled: field "kind"; and 2 more',
      ),
    );
  });

  it('says when the origin does not answer GraphQL', async () => {
    const url = await startOrigin((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>');
    });
    source = createSchemaSource(config({ origin: { url } }), capturingLogger().logger, { retryDelaysMs: [1000] });
    await eventually(() =>
      expect(source?.unavailableReason()).toBe(
        `${url} answered HTTP 502 with text/html, not a GraphQL JSON response: is origin.url the origin's GraphQL endpoint? (or give svc-cache the origin's SDL in schema.file)`,
      ),
    );
  });

  it('gives up on an attempt that takes too long', async () => {
    const url = await startOrigin(() => undefined);
    source = createSchemaSource(config({ origin: { url } }), capturingLogger().logger, { retryDelaysMs: [1000], timeoutMs: 50 });
    await eventually(() => expect(source?.unavailableReason()).toBe(`no answer from ${url} within 50ms`));
  });

  it('stops retrying once closed', async () => {
    const url = `http://127.0.0.1:${await freePort()}/graphql`;
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url } }), logger, { retryDelaysMs: [10] });
    await eventually(() => expect(lines.length).toBeGreaterThanOrEqual(1));
    source.close();
    const count = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines.length).toBe(count);
  });
});

describe('reload', () => {
  it('loads the new source, and keeps the current schema while the new one fails', async () => {
    const first = join(directory, 'first.graphql');
    const second = join(directory, 'second.graphql');
    await writeFile(first, 'type Query { a: Int }');
    await writeFile(second, 'type Query { b: Int }');
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file: first } }), logger);
    await source.ready;

    source.reload(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file: second } }));
    await eventually(() => expect(source?.current()?.getQueryType()?.getFields().b).toBeDefined());

    await writeFile(second, 'type Query {');
    source.reload(config({ origin: { url: 'http://127.0.0.1:1/graphql' }, schema: { file: second } }));
    await eventually(() => expect(lines.at(-1)?.level).toBe(ERROR));
    expect(lines.at(-1)?.msg).toBe(
      `cannot reload the origin schema, keeping the previous one: schema file ${second}: line 1, column 13: Syntax Error: Expected Name, found <EOF>.`,
    );
    expect(source.current()?.getQueryType()?.getFields().b).toBeDefined();
    expect(source.unavailableReason()).toBeUndefined();
  });

  it('switches from a file to introspection', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, 'type Query { a: Int }');
    const url = await startOrigin(serveSchema(buildSchema(ORIGIN_SDL)));
    source = createSchemaSource(config({ origin: { url }, schema: { file } }), capturingLogger().logger);
    await source.ready;
    source.reload(config({ origin: { url } }));
    await eventually(() => expect(source?.current()?.getType('Todo')).toBeDefined());
  });
});

describe('configuration checked against the schema', () => {
  it('warns about rule and key field names the origin schema does not have', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, `${ORIGIN_SDL}\nunion Result = Todo | User`);
    const { logger, lines } = capturingLogger();
    source = createSchemaSource(
      config({
        origin: { url: 'http://127.0.0.1:1/graphql' },
        schema: { file },
        rules: [
          { types: ['Query', 'Todos'], maxAge: 60 },
          { types: { User: ['email', 'emial'], Result: ['id'], Todo: [] }, maxAge: 60 },
          // Introspection named to cache it is no mismatch; on another type it is.
          { types: { Query: ['__schema', '__type'], Todo: ['__schema'] }, maxAge: 60 },
        ],
        keyFields: { types: { Todo: ['sku'], Product: ['sku'] } },
      }),
      logger,
    );
    await source.ready;
    expect(lines.filter((line) => line.level === WARN).map((line) => line.msg)).toEqual([
      'configuration does not match the origin schema: rules[0].types: the origin schema has no type Todos; did you mean Todo?',
      'configuration does not match the origin schema: rules[1].types.User: type User has no field emial; did you mean email?',
      'configuration does not match the origin schema: rules[1].types.Result: Result has no fields (it is not an object or interface type)',
      'configuration does not match the origin schema: rules[2].types.Todo: type Todo has no field __schema',
      'configuration does not match the origin schema: keyFields.types.Todo: type Todo has no field sku',
      'configuration does not match the origin schema: keyFields.types.Product: the origin schema has no type Product',
    ]);
  });

  // The new-user audit: a scoped rule for `Stok` (meant: Stock) matched nothing, the PUBLIC
  // `[Query]` rule cached one user's stock for every user, and one warning line said so.
  it('says at error when a rule with a scope or maxAge 0 names what the schema lacks, and tells how many names it lacks', async () => {
    const file = join(directory, 'origin.graphql');
    await writeFile(file, ORIGIN_SDL);
    const { logger, lines } = capturingLogger();
    const counts: number[] = [];
    source = createSchemaSource(
      config({
        origin: { url: 'http://127.0.0.1:1/graphql' },
        schema: { file },
        scopes: { USER: 'header:x-user-id' },
        rules: [
          { types: ['Query'], maxAge: 60 },
          { types: { Todoo: [] }, maxAge: 60, scope: 'USER' },
          { types: ['Userr'], maxAge: 60, scope: 'PUBLIC' },
          { types: { User: ['emial'] }, maxAge: 0 },
        ],
      }),
      logger,
      { onLoaded: (_schema, _config, mismatches) => counts.push(mismatches) },
    );
    await source.ready;
    const guarding = 'a rule with a scope or maxAge 0 does not match the origin schema (until it does, other rules, PUBLIC ones too, may cache what it would keep in its scope or uncached)';
    expect(lines.filter((line) => line.level >= WARN).map((line) => [line.level, line.msg])).toEqual([
      [ERROR, `${guarding}: rules[1].types.Todoo: the origin schema has no type Todoo; did you mean Todo?`],
      [WARN, 'configuration does not match the origin schema: rules[2].types: the origin schema has no type Userr; did you mean User?'],
      [ERROR, `${guarding}: rules[3].types.User: type User has no field emial; did you mean email?`],
    ]);
    expect(counts).toEqual([3]);
  });
});

/** Waits for an assertion to hold; generous because the whole suite may be running alongside. */
function eventually(assertion: () => void): Promise<void> {
  return vi.waitFor(assertion, { timeout: 5_000, interval: 10 });
}
