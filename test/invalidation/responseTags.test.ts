import { buildSchema, execute, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { prepareOperation, type PreparedOperation } from '../../src/invalidation/entityFields.js';
import { mutationInvalidationTags, responseTags, type MutationPolicy } from '../../src/invalidation/responseTags.js';
import { invalidationTag as tag } from '../../src/invalidation/tags.js';
import { connectionSchema } from '../support/connectionOrigin.js';
import { heapKeptBy } from '../support/heap.js';
import { keyFields, originBody, prepare, schema, spreadChain } from './fixtures.js';

/** Tags of what a graphql-js origin answers to the rewritten operation. */
async function tagsOf(query: string, operationName = '', variables: Record<string, unknown> = {}): Promise<string[] | undefined> {
  const prepared = prepare(query);
  return responseTags(schema, prepared, JSON.parse(await originBody(prepared.document, variables)), operationName, variables);
}

async function mutationTags(query: string, policy: MutationPolicy): Promise<string[]> {
  const prepared = prepare(query);
  return mutationInvalidationTags(schema, prepared, JSON.parse(await originBody(prepared.document)), policy);
}

const sorted = (tags: readonly string[] | undefined): string[] => [...(tags ?? [])].sort();

describe('responseTags', () => {
  it('keeps nothing of the query text alive through its tags: an operation name and a key it names are cut out of it', () => {
    const TEXTS = 40;
    const TEXT_BYTES = 256 * 1024;
    const { keptBytes, result: kept } = heapKeptBy(() =>
      Array.from({ length: TEXTS }, (_, i) => {
        const text = `query ALongOperationName${i} { todos { title } todo(id: "ALongTodoIdentifier${i}") { title } } #${'x'.repeat(TEXT_BYTES)}`;
        // As the engine has it: the name of the client's document, which graphql-js cuts out of the text.
        const operationName = (parse(text, { noLocation: true }).definitions[0] as OperationDefinitionNode).name!.value;
        return responseTags(schema, prepare(text), { data: { todos: [], todo: null } }, operationName) ?? [];
      }),
    );
    expect(kept.map((tags) => tags.find((name) => name.startsWith('o:')))).toEqual(kept.map((_, i) => tag.operation(`ALongOperationName${i}`)));
    expect(kept.map((tags) => tags.find((name) => name.startsWith('e:')))).toEqual(kept.map((_, i) => tag.entity('Todo', `ALongTodoIdentifier${i}`)));
    // The texts themselves would be 10 MiB.
    expect(keptBytes).toBeLessThan((TEXTS * TEXT_BYTES) / 10);
  });

  it('tags every entity of a list, its type, the list and the root field', async () => {
    expect(sorted(await tagsOf('{ todos { title } }'))).toEqual(
      sorted([
        tag.entity('Todo', '1'),
        tag.entity('Todo', '2'),
        tag.entity('Todo', '3'),
        tag.type('Todo'),
        tag.list('Todo'),
        tag.query('todos'),
      ]),
    );
  });

  // The CPU audit: an origin's list nested 16,000 deep under a key the document does not select
  // overflowed the call stack, and the answer passed as an engine error, logged each time.
  it('reads a list nested 16,000 deep under a key it did not ask for without running out of stack', () => {
    const deep: unknown = JSON.parse(`${'['.repeat(16_000)}1${']'.repeat(16_000)}`);
    expect(responseTags(schema, prepare('{ todos { id } }'), { data: { todos: [], extra: deep } }, '')).toContain(tag.query('todos'));
  });

  it('tags the entities a chain of 20,000 spreads selects', () => {
    const prepared = prepare(spreadChain('{ todos { ...F0 } }', 'Todo', 'id title'));
    const result = { data: { todos: [{ id: '1', title: 'a' }] } };
    expect(sorted(responseTags(schema, prepared, result, ''))).toEqual(
      sorted([tag.entity('Todo', '1'), tag.type('Todo'), tag.list('Todo'), tag.query('todos')]),
    );
  });

  it('tags nested entities, and lists only for the types found in lists', async () => {
    expect(sorted(await tagsOf('{ todo(id: "2") { title author { name todos { done } } } }'))).toEqual(
      sorted([
        tag.entity('Todo', '2'),
        tag.type('Todo'),
        tag.entity('User', 'u2'),
        tag.type('User'),
        tag.list('Todo'),
        tag.query('todo'),
      ]),
    );
  });

  it('tags a null field with the types it could have held', async () => {
    expect(sorted(await tagsOf('{ me { name } }'))).toEqual(sorted([tag.type('User'), tag.query('me')]));
    expect(sorted(await tagsOf('{ node(id: "nope") { id } }'))).toEqual(
      sorted([tag.type('Todo'), tag.type('User'), tag.query('node'), tag.entity('Todo', 'nope'), tag.entity('User', 'nope')]),
    );
    const prepared = prepare('{ todo(id: "1") { author { name } } }');
    const result = { data: { todo: { author: null, _svc_id: '1' } } };
    expect(sorted(responseTags(schema, prepared, result, ''))).toEqual(
      sorted([tag.entity('Todo', '1'), tag.type('Todo'), tag.type('User'), tag.query('todo')]),
    );
  });

  it('tags a null asked for by key with the entity of that key, read from literals and variables alike', async () => {
    expect(sorted(await tagsOf('{ todo(id: "404") { title } }'))).toEqual(sorted([tag.entity('Todo', '404'), tag.type('Todo'), tag.query('todo')]));
    // An ID given as a number is the string an answer's key reads as.
    expect(await tagsOf('{ todo(id: 404) { title } }')).toContain(tag.entity('Todo', '404'));
    expect(await tagsOf('query ($id: ID!) { todo(id: $id) { title } }', '', { id: '404' })).toContain(tag.entity('Todo', '404'));
    expect(sorted((await tagsOf('query ($id: ID!) { node(id: $id) { id } }', '', { id: '404' }))?.filter((name) => name.startsWith('e:')))).toEqual(
      sorted([tag.entity('Todo', '404'), tag.entity('User', '404')]),
    );
    // Each null lookup of an aliased pair names its own key; a field no key argument names, none.
    expect((await tagsOf('{ a: todo(id: "404") { id } b: todo(id: "405") { id } me { name } }'))?.filter((name) => name.startsWith('e:')).sort()).toEqual(
      [tag.entity('Todo', '404'), tag.entity('Todo', '405')].sort(),
    );
  });

  it('tags a null lookup under each type whose field it is, and one by other arguments with the type of any key', async () => {
    const covariant = buildSchema(`
      interface Node { id: ID! sibling(id: ID): Node }
      type A implements Node { id: ID! sibling(id: ID): A }
      type B implements Node { id: ID! sibling(id: ID): B }
      type User { id: ID! email: String }
      type Account { id: ID! }
      type Query { nodes: [Node!]! userByEmail(email: String!): User account(id: ID, email: String): Account }
    `);
    const tagsOf = async (query: string, variables: Record<string, unknown> = {}) => {
      const prepared = prepareOperation(covariant, parse(query), keyFields);
      const rootValue = { nodes: [{ __typename: 'A', id: '1', sibling: null }, { __typename: 'B', id: '2', sibling: null }], userByEmail: null, account: null };
      const result = JSON.parse(JSON.stringify(await execute({ schema: covariant, document: prepared.document, rootValue, variableValues: variables })));
      return (responseTags(covariant, prepared, result, '', variables) ?? []).filter((name) => /^[eu]:/.test(name)).sort();
    };
    expect(await tagsOf('{ nodes { ... on Node { sibling(id: "5") { id } } } userByEmail(email: "x@example.com") { email } }')).toEqual(
      [tag.entity('A', '1'), tag.entity('A', '5'), tag.entity('B', '2'), tag.entity('B', '5'), tag.unkeyed('User')].sort(),
    );
    // The key argument left out, null, or a variable left out: any Account.
    for (const [query, variables] of [
      ['{ account(email: "x@example.com") { id } }', {}],
      ['{ account(id: null, email: "x@example.com") { id } }', {}],
      ['query ($id: ID, $email: String) { account(id: $id, email: $email) { id } }', { email: 'x@example.com' }],
    ] as const) {
      expect(await tagsOf(query, variables)).toEqual([tag.unkeyed('Account')]);
    }
  });

  it('names the type of a null lookup whose key argument cannot be read, rather than no entity', () => {
    // Variables that do not coerce (the origin would have refused them): the unkeyed tag, which every purge by key of the type names.
    const prepared = prepare('query ($id: ID!) { todo(id: $id) { title } }');
    expect(responseTags(schema, prepared, { data: { todo: null } }, '', { id: { not: 'an id' } })).toContain(tag.unkeyed('Todo'));
  });

  it('tags an empty list with the types and lists it could have held, union members included', async () => {
    expect(sorted(await tagsOf('{ search(text: "nothing like it") { ... on Todo { title } } }'))).toEqual(
      sorted([
        tag.type('Todo'),
        tag.list('Todo'),
        tag.type('User'),
        tag.list('User'),
        tag.type('Product'),
        tag.list('Product'),
        tag.query('search'),
      ]),
    );
    const prepared = prepare('{ user(id: "u2") { todos { title } } }');
    const result = { data: { user: { todos: [], _svc_id: 'u2' } } };
    expect(sorted(responseTags(schema, prepared, result, ''))).toEqual(
      sorted([tag.entity('User', 'u2'), tag.type('User'), tag.type('Todo'), tag.list('Todo'), tag.query('user')]),
    );
  });

  it('names union and interface results by their concrete __typename', async () => {
    expect(sorted(await tagsOf('{ search(text: "e") { ... on Product { name } } node(id: "u1") { id } }'))).toEqual(
      sorted([
        tag.entity('Todo', '2'),
        tag.entity('Todo', '3'),
        tag.type('Todo'),
        tag.list('Todo'),
        tag.entity('User', 'u1'),
        tag.type('User'),
        tag.list('User'),
        tag.entity('Product', 'sku-1'),
        tag.entity('Product', 'sku-2'),
        tag.type('Product'),
        tag.list('Product'),
        tag.query('search'),
        tag.query('node'),
      ]),
    );
  });

  it('identifies Product by sku', async () => {
    expect(sorted(await tagsOf('{ product(sku: "sku-2") { name } }'))).toEqual(
      sorted([tag.entity('Product', 'sku-2'), tag.type('Product'), tag.query('product')]),
    );
  });

  it('tags the operation name and root fields by their schema name, not their alias', async () => {
    expect(sorted(await tagsOf('query Home { mine: todo(id: "1") { id } clock: time }', 'Home'))).toEqual(
      sorted([tag.operation('Home'), tag.entity('Todo', '1'), tag.type('Todo'), tag.query('todo'), tag.query('time')]),
    );
  });

  it('reads the key from the client\'s own aliased field, or from the added one when the client\'s was left out', async () => {
    expect(prepare('{ todos { todoId: id } }').rewritten).toBe(false);
    expect(await tagsOf('{ todo(id: "3") { todoId: id } }')).toContain(tag.entity('Todo', '3'));
    const query = 'query ($withId: Boolean!) { todo(id: "3") { id @include(if: $withId) } }';
    expect(await tagsOf(query, '', { withId: false })).toContain(tag.entity('Todo', '3'));
  });

  it('spells non-string keys as the purge API does', () => {
    const intSchema = buildSchema('type Order { id: Int! } type Query { orders: [Order!]! }');
    const prepared = prepareOperation(intSchema, parse('{ orders { id } }'), keyFields);
    expect(responseTags(intSchema, prepared, { data: { orders: [{ id: 42 }] } }, '')).toContain(tag.entity('Order', '42'));
  });

  it('gives up on a response naming more tags than the bound', async () => {
    const prepared = prepare('{ todos { title } }');
    const result = JSON.parse(await originBody(prepared.document));
    expect(responseTags(schema, prepared, result, '', {}, 6)).toHaveLength(6);
    expect(responseTags(schema, prepared, result, '', {}, 5)).toBeUndefined();
  });

  it('gives up on an object whose __typename the schema does not know, rather than leave what it holds untagged', () => {
    const prepared = prepare('{ node(id: "x") { id } }');
    expect(responseTags(schema, prepared, { data: { node: { id: 'x', _svc_typename: 'Ghost' } } }, '')).toBeUndefined();
  });

  it('gives up on a field the schema does not have when it holds objects, whose entities it cannot name', () => {
    const prepared = prepare('{ todos { id newField } }');
    const answer = (value: unknown) => ({ data: { todos: [{ id: '1', newField: value }] } });
    for (const value of [{ id: 'u9' }, [[{ id: 'u9' }]]]) expect(responseTags(schema, prepared, answer(value), '')).toBeUndefined();
    // A scalar, a list of them or null holds no object: the answer is tagged as ever.
    for (const value of ['x', [1, 2], null]) {
      expect(sorted(responseTags(schema, prepared, answer(value), ''))).toEqual(sorted([tag.entity('Todo', '1'), tag.type('Todo'), tag.list('Todo'), tag.query('todos')]));
    }
    const atRoot = prepare('{ newRootField { id } }');
    expect(responseTags(schema, atRoot, { data: { newRootField: { id: 'u9' } } }, '')).toBeUndefined();
  });

  it('tags an entity that came without its key (a stored document, sent without added fields) as an unkeyed object of its type', () => {
    const prepared = prepare('{ todos { title author { name } } }');
    const answer = { data: { todos: [{ title: 'Buy milk', author: { name: 'Ann' } }] } };
    expect(sorted(responseTags(schema, prepared, answer, ''))).toEqual(
      sorted([tag.unkeyed('Todo'), tag.unkeyed('User'), tag.type('Todo'), tag.type('User'), tag.list('Todo'), tag.query('todos')]),
    );
    // Not where the document does not validate: the origin's schema is not svc-cache's, so what the
    // walk saw of the answer is not to be trusted.
    const invalid = prepare('{ todos { title extra } }');
    expect(invalid.rewritten).toBe(false);
    expect(responseTags(schema, invalid, { data: { todos: [{ title: 'Buy milk', extra: 1 }] } }, '')).toBeUndefined();
  });

  describe("objects where svc-cache's schema says there are none, or others (the origin's schema is newer)", () => {
    const storedWith = (query: string, data: Record<string, unknown>) => responseTags(schema, prepare(query), { data }, '');

    it('gives up on objects under a fragment whose type condition does not apply to the type in svc-cache\'s schema', () => {
      expect(storedWith('{ todo(id: "1") { id ... on Assignable { author { id name } } } }', { todo: { id: '1', author: { id: 'u1', name: 'A' } } })).toBeUndefined();
      expect(storedWith('{ todo(id: "1") { title ... on Assignable { author { id } } } }', { todo: { title: 'a', author: { id: 'u1' } } })).toBeUndefined();
    });

    it('gives up on objects under a field svc-cache\'s schema has as a scalar', () => {
      expect(storedWith('{ todos { id done { setBy { id } } } }', { todos: [{ id: '1', done: { setBy: { id: 'u1' } } }] })).toBeUndefined();
    });

    it('gives up on an object whose __typename is another type than the field returns', () => {
      expect(storedWith('{ todos { id author { __typename name } } }', { todos: [{ id: '1', author: { __typename: 'Product', name: 'Beans' } }] })).toBeUndefined();
      expect(storedWith('{ todos { id author { __typename name } } }', { todos: [{ id: '1', author: { __typename: 'User', name: 'Ann' } }] })).toBeDefined();
    });

    it('gives up on what a fragment that does not apply merges under a key the type selects itself', () => {
      const query = '{ todo(id: "1") { id author { id } ... on Assignable { author { id todos { id } } } } }';
      expect(storedWith(query, { todo: { id: '1', author: { id: 'u1', todos: [{ id: '3' }] } } })).toBeUndefined();
      expect(storedWith(query, { todo: { id: '1', author: { id: 'u1' } } })).toBeDefined();
    });

    it('gives up on objects in a list where the schema has one object, or the other way round', () => {
      expect(storedWith('{ todo(id: "1") { id author { id name } } }', { todo: { id: '1', author: [{ id: 'u1', name: 'A' }] } })).toBeUndefined();
      expect(storedWith('{ todos { id title } }', { todos: { id: '7', title: 'x' } })).toBeUndefined();
      expect(storedWith('{ todos { id title } }', { todos: [[{ id: '7', title: 'x' }]] })).toBeUndefined();
    });

    it("still names what a mutation's object of another type holds", () => {
      const prepared = prepare('mutation { updateTodo(id: "1", title: "a") { __typename id author { id name } } }');
      const answer = { data: { updateTodo: { __typename: 'Task', id: '1', author: { id: 'u1', name: 'Renamed' } } } };
      expect(mutationInvalidationTags(schema, prepared, answer, 'Entity')).toEqual(expect.arrayContaining([tag.type('Todo'), tag.entity('User', 'u1')]));
    });

    it('invalidates every type queries hold after a mutation whose answer holds such objects', () => {
      const prepared = prepare('mutation { updateTodo(id: "1", title: "a") { id ... on Assignable { author { id } } } }');
      const tags = mutationInvalidationTags(schema, prepared, { data: { updateTodo: { id: '1', author: { id: 'u1' } } } }, 'Entity');
      expect(tags).toEqual(expect.arrayContaining([tag.type('Todo'), tag.type('User'), tag.type('Product')]));
    });
  });

  it('tags a key that came back null as an unkeyed object: it may be any of its type', () => {
    const nullableSchema = buildSchema('type Draft { id: ID title: String } type Query { drafts: [Draft!]! } type Mutation { editDraft(id: ID!): Draft }');
    const prepared = prepareOperation(nullableSchema, parse('{ drafts { title } }'), keyFields);
    expect(sorted(responseTags(nullableSchema, prepared, { data: { drafts: [{ title: 'x', _svc_id: null }] } }, ''))).toEqual(
      sorted([tag.unkeyed('Draft'), tag.type('Draft'), tag.list('Draft'), tag.query('drafts')]),
    );
    // A mutation's object with a null key names every object of its type.
    const edit = prepareOperation(nullableSchema, parse('mutation { editDraft(id: "d1") { title } }'), keyFields);
    expect(mutationInvalidationTags(nullableSchema, edit, { data: { editDraft: { title: 'y', _svc_id: null } } }, 'Entity')).toEqual([tag.type('Draft')]);
  });

  describe('a place that came back null or empty, through objects without a key (README, Invalidation after mutations)', () => {
    const tagsOf = (query: string, data: Record<string, unknown>): string[] =>
      sorted(responseTags(connectionSchema, prepareOperation(connectionSchema, parse(query), keyFields), { data }, ''));
    const updated = { updateTodo: { id: '1', done: true } };
    const update = prepareOperation(connectionSchema, parse('mutation { updateTodo(id: "1", done: true) { id done } }'), keyFields);

    it('is tagged with the entities the edges of an empty connection would hold, which Type and a purge of the type name', () => {
      const stored = tagsOf('{ todosConnection(done: true) { edges { node { id title } } } }', { todosConnection: { edges: [] } });
      expect(stored).toEqual(
        sorted([tag.query('todosConnection'), tag.type('TodoConnection'), tag.type('TodoEdge'), tag.list('TodoEdge'), tag.type('Todo'), tag.list('Todo')]),
      );
      expect(mutationInvalidationTags(connectionSchema, update, { data: updated }, 'Type')).toEqual([tag.type('Todo')]);
    });

    it('is tagged, for a null connection, with its page info and, as listed, its edges and their nodes; not with what an entity holds', () => {
      expect(tagsOf('{ archive { pageInfo { hasNextPage } edges { cursor } } }', { archive: null })).toEqual(
        sorted([
          tag.query('archive'),
          tag.type('TodoConnection'),
          tag.type('PageInfo'),
          tag.type('TodoEdge'),
          tag.list('TodoEdge'),
          tag.type('Todo'),
          tag.list('Todo'),
        ]),
      );
    });

    it('invalidates, nulled in an answer with errors, what a payload could have held: the mutation may have created it', () => {
      const create = prepareOperation(connectionSchema, parse('mutation { createTodo(title: "x") { todoEdge { node { id } } } }'), keyFields);
      const nulled = { errors: [{ message: 'failed after the write', path: ['createTodo', 'todoEdge'] }], data: { createTodo: null } };
      expect(mutationInvalidationTags(connectionSchema, create, nulled, 'Entity')).toEqual([tag.type('CreateTodoPayload'), tag.type('TodoEdge'), tag.type('Todo')]);
    });

    it('tags a connection whose selection reaches no todo with the todos it holds, as objects without their key', () => {
      const page = { pageInfo: { hasNextPage: false }, edges: [{ cursor: 'c1' }] };
      expect(tagsOf('{ todosConnection { pageInfo { hasNextPage } edges { cursor } } }', { todosConnection: page })).toEqual(
        sorted([tag.query('todosConnection'), tag.type('TodoConnection'), tag.type('PageInfo'), tag.type('TodoEdge'), tag.list('TodoEdge'), tag.type('Todo'), tag.unkeyed('Todo')]),
      );
      const reached = tagsOf('{ todosConnection { edges { node { id } } } }', { todosConnection: { edges: [{ node: { id: '1' } }] } });
      expect(reached).not.toContain(tag.unkeyed('Todo'));
      expect(reached).toContain(tag.entity('Todo', '1'));
    });

    it('tags a connection whose edges @include or @skip left out as naming none of its todos, whatever else it holds', () => {
      const owned = buildSchema(`
        type Todo { id: ID! } type User { id: ID! } type Stats { count: Int }
        type TodoEdge { cursor: String node: Todo } type PageInfo { hasNextPage: Boolean! }
        type TodoConnection { edges: [TodoEdge!]! pageInfo: PageInfo! owner: User stats: Stats }
        type Query { todosConnection: TodoConnection! }
      `);
      const query = 'query ($n: Boolean!) { todosConnection { owner { id } stats { count } edges @include(if: $n) { node { id } } } }';
      const tagsIn = (data: Record<string, unknown>) => sorted(responseTags(owned, prepareOperation(owned, parse(query), keyFields), { data }, ''));
      expect(tagsIn({ todosConnection: { owner: { id: 'u1' }, stats: null } })).toEqual(expect.arrayContaining([tag.type('Todo'), tag.unkeyed('Todo')]));
      expect(tagsIn({ todosConnection: { owner: { id: 'u1' }, stats: null, edges: [{ node: { id: '1' } }] } })).not.toContain(tag.unkeyed('Todo'));
      expect(tagsIn({ todosConnection: { owner: { id: 'u1' }, stats: null, edges: [{ node: null }] } })).not.toContain(tag.unkeyed('Todo'));
    });

    it('reads only the connection\'s own page for whether it names its todos: not an entity\'s fields, nor a nested connection', () => {
      const nested = buildSchema(`
        type Todo { id: ID! } type Tag { name: String } type Project { id: ID! } type PageInfo { hasNextPage: Boolean! }
        type ProjectEdge { cursor: String node: Project } type ProjectConnection { edges: [ProjectEdge!]! pageInfo: PageInfo! }
        type User { id: ID! tags: [Tag!]! friends: [User!]! projects: ProjectConnection! todos: [Todo!]! }
        type TodoEdge { cursor: String node: Todo } type TodoConnection { totalCount: Int edges: [TodoEdge!]! pageInfo: PageInfo! owner: User }
        type Group { name: String todos: TodoConnection! }
        type Query { todosConnection: TodoConnection! groups: [Group!]! }
      `);
      const edges = 'edges @include(if: $n) { node { id } }';
      const tagsIn = (query: string, data: Record<string, unknown>) =>
        sorted(responseTags(nested, prepareOperation(nested, parse(`query ($n: Boolean!) ${query}`), keyFields), { data }, ''));
      const cases: Array<[string, Record<string, unknown>]> = [
        [`{ todosConnection { totalCount owner { id tags { name } } ${edges} } }`, { todosConnection: { totalCount: 1, owner: { id: 'u1', tags: [] } } }],
        [`{ todosConnection { totalCount owner { id friends { id } } ${edges} } }`, { todosConnection: { totalCount: 1, owner: { id: 'u1', friends: [] } } }],
        [
          `{ todosConnection { totalCount owner { id projects { edges { node { id } } } } ${edges} } }`,
          { todosConnection: { totalCount: 1, owner: { id: 'u1', projects: { edges: [{ node: { id: 'p1' } }] } } } },
        ],
        [`{ todosConnection { totalCount owner { id projects { edges { node { id } } } } ${edges} } }`, { todosConnection: { totalCount: 1, owner: { id: 'u1', projects: { edges: [] } } } }],
        [`{ groups { todos { totalCount owner { id } ${edges} } } }`, { groups: [{ todos: { totalCount: 1, owner: null } }] }],
        [`{ todosConnection { totalCount owner { id todos { id } } ${edges} } }`, { todosConnection: { totalCount: 1, owner: { id: 'u1', todos: [{ id: '1' }] } } }],
      ];
      for (const [query, data] of cases) expect(tagsIn(query, data), query).toEqual(expect.arrayContaining([tag.type('Todo'), tag.unkeyed('Todo')]));
    });

    it('ends at a type that holds itself', () => {
      expect(tagsOf('{ folder { name } }', { folder: null })).toEqual(
        sorted([tag.query('folder'), tag.type('Folder'), tag.list('Folder'), tag.type('Todo'), tag.list('Todo')]),
      );
    });
  });

  it('tags only the operation when there is no data', () => {
    expect(responseTags(schema, prepare('query Q { todos { title } }'), { errors: [{ message: 'boom' }] }, 'Q')).toEqual([
      tag.operation('Q'),
      tag.query('todos'),
    ]);
  });
});

describe('mutationInvalidationTags', () => {
  describe('objects no key names', () => {
    const relaySchema = buildSchema(`
      type Settings { theme: String! money: Money! }
      type Money { amount: Int! }
      type Todo { id: ID! price: Money! }
      type TodoEdge { cursor: String! node: Todo! }
      type PageInfo { hasNextPage: Boolean! }
      type TodoConnection { edges: [TodoEdge!]! pageInfo: PageInfo! }
      type CreateTodoPayload { todoEdge: TodoEdge! query: Query! }
      type SetThemePayload { settings: Settings! }
      type Query { settings: Settings! todos: TodoConnection! }
      type Mutation { setTheme(theme: String!): Settings! createTodo: CreateTodoPayload! setThemeInPayload(theme: String!): SetThemePayload! addTodoEdge: TodoEdge! }
    `);
    const tagsAfter = (query: string, data: Record<string, unknown>, policy: MutationPolicy): string[] =>
      sorted(mutationInvalidationTags(relaySchema, prepareOperation(relaySchema, parse(query), keyFields), { data }, policy));

    it.each(['Entity', 'List'] as const)('invalidate their type under %s when a root field returns one that queries hold', (policy) => {
      const data = { setTheme: { theme: 'dark', money: { amount: 1 } } };
      expect(tagsAfter('mutation { setTheme(theme: "dark") { theme money { amount } } }', data, policy)).toContain(tag.type('Settings'));
      expect(tagsAfter('mutation { setTheme(theme: "dark") { theme money { amount } } }', data, policy)).not.toContain(tag.type('Money'));
    });

    it.each(['Entity', 'List'] as const)('invalidate their type under %s when a payload no query holds carries one that queries hold', (policy) => {
      const data = { setThemeInPayload: { settings: { theme: 'dark', money: { amount: 1 } } } };
      const tags = tagsAfter('mutation { setThemeInPayload(theme: "dark") { settings { theme money { amount } } } }', data, policy);
      expect(tags).toContain(tag.type('Settings'));
      expect(tags).not.toContain(tag.type('Money'));
    });

    it('invalidate the type a root field returns whatever its name, a connection\'s or an edge\'s too', () => {
      const data = { addTodoEdge: { cursor: 'c', node: { id: '1', price: { amount: 2 } } } };
      expect(tagsAfter('mutation { addTodoEdge { cursor node { id price { amount } } } }', data, 'Entity')).toEqual([
        tag.entity('Todo', '1'),
        tag.type('TodoEdge'),
        tag.unkeyed('Todo'),
      ]);
      const smtp = buildSchema('type SmtpConnection { host: String! } type Query { smtpConnection: SmtpConnection! } type Mutation { setSmtpHost(host: String!): SmtpConnection! }');
      const prepared = prepareOperation(smtp, parse('mutation { setSmtpHost(host: "b") { host } }'), keyFields);
      expect(mutationInvalidationTags(smtp, prepared, { data: { setSmtpHost: { host: 'b' } } }, 'Entity')).toEqual([tag.type('SmtpConnection')]);
    });

    it('invalidate their type when a payload\'s query root carries one, as the payload itself would', () => {
      const data = { createTodo: { todoEdge: { cursor: 'c', node: { id: '1', price: { amount: 2 } } }, query: { settings: { theme: 'dark' } } } };
      const query = 'mutation { createTodo { todoEdge { cursor node { id price { amount } } } query { settings { theme } } } }';
      expect(tagsAfter(query, data, 'Entity')).toEqual([tag.entity('Todo', '1'), tag.type('Settings'), tag.unkeyed('Todo')]);
    });

    it('leave a payload no query holds, and the edges and page info below it, to the entities in them', () => {
      const data = { createTodo: { todoEdge: { cursor: 'c', node: { id: '1', price: { amount: 2 } } }, query: { todos: { pageInfo: { hasNextPage: false }, edges: [] } } } };
      const query = 'mutation { createTodo { todoEdge { cursor node { id price { amount } } } query { todos { pageInfo { hasNextPage } edges { cursor } } } } }';
      expect(tagsAfter(query, data, 'Entity')).toEqual([tag.entity('Todo', '1'), tag.unkeyed('Todo')]);
    });
  });

  const update = 'mutation { updateTodo(id: "1", title: "Buy oat milk") { title author { name } } }';

  it('invalidates nothing under None', async () => {
    expect(await mutationTags(update, 'None')).toEqual([]);
  });

  it('invalidates every type queries hold when a field the schema does not have returned objects, whatever the policy', () => {
    const prepared = prepare('mutation { updateTodo(id: "1", title: "a") { id newField { id } } }');
    const result = { data: { updateTodo: { id: '1', newField: { id: 'u9' } } } };
    for (const policy of ['Entity', 'List', 'Type'] as const) {
      expect(mutationInvalidationTags(schema, prepared, result, policy)).toEqual(expect.arrayContaining([tag.type('Todo'), tag.type('User')]));
    }
    const scalar = { data: { updateTodo: { id: '1', newField: 'x' } } };
    expect(mutationInvalidationTags(schema, prepared, scalar, 'Entity')).toEqual([tag.entity('Todo', '1'), tag.unkeyed('Todo')]);
  });

  it('invalidates every returned entity under Entity, and the objects of their types whose key no answer holds', async () => {
    expect(sorted(await mutationTags(update, 'Entity'))).toEqual(
      sorted([tag.entity('Todo', '1'), tag.entity('User', 'u1'), tag.unkeyed('Todo'), tag.unkeyed('User')]),
    );
  });

  it('adds the lists of every returned type under List', async () => {
    expect(sorted(await mutationTags(update, 'List'))).toEqual(
      sorted([tag.entity('Todo', '1'), tag.entity('User', 'u1'), tag.unkeyed('Todo'), tag.unkeyed('User'), tag.list('Todo'), tag.list('User')]),
    );
  });

  it('invalidates every response holding a returned type under Type', async () => {
    expect(sorted(await mutationTags(update, 'Type'))).toEqual(sorted([tag.type('Todo'), tag.type('User')]));
  });

  it('leaves list queries alone after an added item under Entity (docs/graphql-caching.md, Invalidation)', async () => {
    const add = 'mutation { addTodo(title: "Call mum") { title } }';
    expect(await mutationTags(add, 'Entity')).toEqual([tag.entity('Todo', '4'), tag.unkeyed('Todo')]);
    expect(sorted(await mutationTags(add, 'List'))).toEqual(sorted([tag.entity('Todo', '4'), tag.unkeyed('Todo'), tag.list('Todo')]));
  });

  it('identifies a returned Product by sku, and invalidates nothing for a null or scalar result', async () => {
    expect(await mutationTags('mutation { updateProduct(sku: "sku-2", price: 5) { price } }', 'Entity')).toEqual([
      tag.entity('Product', 'sku-2'),
      tag.unkeyed('Product'),
    ]);
    expect(await mutationTags('mutation { updateTodo(id: "404", done: true) { done } deleteTodo(id: "2") }', 'Type')).toEqual([]);
  });

  it('invalidates what an errored place could have held: the mutation may have written before the error nulled it', () => {
    const prepared = prepare('mutation { updateTodo(id: "1", title: "x") { id title author { name } } }');
    const nulledRoot = { errors: [{ message: 'failed after the write', path: ['updateTodo', 'title'] }], data: { updateTodo: null } };
    expect(mutationInvalidationTags(schema, prepared, nulledRoot, 'Entity')).toEqual([tag.type('Todo')]);
    const nulledData = { errors: [{ message: 'failed after the write', path: ['updateTodo'] }], data: null };
    expect(mutationInvalidationTags(schema, prepared, nulledData, 'Entity')).toEqual([tag.type('Todo')]);
    const nulledAuthor = { errors: [{ message: 'no author', path: ['updateTodo', 'author', 'name'] }], data: { updateTodo: { id: '1', title: 'x', author: null } } };
    expect(sorted(mutationInvalidationTags(schema, prepared, nulledAuthor, 'Entity'))).toEqual(sorted([tag.entity('Todo', '1'), tag.unkeyed('Todo'), tag.type('User')]));
  });


  it('invalidates every type an object could be when its __typename is unknown', () => {
    const nodeSchema = buildSchema(`
      interface Node { id: ID! }
      type Todo implements Node { id: ID! }
      type User implements Node { id: ID! }
      type Query { node(id: ID!): Node }
      type Mutation { touch(id: ID!): Node }
    `);
    const prepared = prepareOperation(nodeSchema, parse('mutation { touch(id: "x") { id } }'), keyFields);
    const result = { data: { touch: { id: 'x', _svc_typename: 'Ghost' } } };
    expect(sorted(mutationInvalidationTags(nodeSchema, prepared, result, 'Entity'))).toEqual(sorted([tag.type('Todo'), tag.type('User')]));
  });

  it('invalidates the whole type of an entity that came back without its key', () => {
    const prepared = prepare('mutation { addTodo(title: "x") { title extra } }');
    const result = { data: { addTodo: { title: 'x', extra: 1 } } };
    expect(mutationInvalidationTags(schema, prepared, result, 'Entity')).toEqual([tag.type('Todo')]);
  });

  it('falls back to type tags when a mutation returns more entities than the bound', () => {
    const bulkSchema = buildSchema('type Todo { id: ID! } type Query { todos: [Todo!]! } type Mutation { importTodos: [Todo!]! }');
    const prepared: PreparedOperation = prepareOperation(bulkSchema, parse('mutation { importTodos { id } }'), keyFields);
    const many = { data: { importTodos: Array.from({ length: 10_001 }, (_, index) => ({ id: String(index) })) } };
    expect(mutationInvalidationTags(bulkSchema, prepared, many, 'Entity')).toEqual([tag.type('Todo')]);
    expect(mutationInvalidationTags(bulkSchema, prepared, many, 'List')).toEqual([tag.type('Todo'), tag.list('Todo')]);
  });
});
