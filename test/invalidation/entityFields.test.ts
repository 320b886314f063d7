import { buildSchema, parse, print, validate } from 'graphql';
import { describe, expect, it, vi } from 'vitest';
import { prepareOperation, stripAddedFields } from '../../src/invalidation/entityFields.js';
import { SelectionPlan } from '../../src/invalidation/selectionPlan.js';
import { keyFields, prepare, schema, spreadChain } from './fixtures.js';

const strip = (query: string, body: string): string => stripAddedFields(prepare(query), Buffer.from(body)).toString();

describe('prepareOperation', () => {
  it('finds the key field a chain of 20,000 spreads selects, and adds nothing', () => {
    expect(prepare(spreadChain('{ todos { ...F0 } }', 'Todo', 'id title')).rewritten).toBe(false);
  });

  it('leaves a chain of 20,000 spreads unchanged where it would add: graphql cannot validate the result', () => {
    expect(prepare(spreadChain('{ todos { ...F0 } }', 'Todo', 'title')).rewritten).toBe(false);
  });

  it('adds the key field of object types, at every depth, under a reserved alias', () => {
    const prepared = prepare('{ todos { title author { name } } }');
    expect(prepared.rewritten).toBe(true);
    expect(prepared.addedKeyPrefix).toBe('_svc_');
    expect(prepared.query).toBe(`{
  todos {
    title
    author {
      name
      _svc_id: id
    }
    _svc_id: id
  }
}`);
  });

  it('adds to lists nested in lists', () => {
    expect(prepare('{ users { name todos { title } } }').query).toBe(`{
  users {
    name
    todos {
      title
      _svc_id: id
    }
    _svc_id: id
  }
}`);
  });

  it('uses the first of the type\'s own key fields: Product by sku', () => {
    expect(prepare('{ products { name } }').query).toBe(`{
  products {
    name
    _svc_sku: sku
  }
}`);
  });

  it('keeps out of the way of aliases, even a client field aliased as the key', () => {
    expect(prepare('{ first: todo(id: "1") { id: title } second: todo(id: "2") { done } }').query).toBe(`{
  first: todo(id: "1") {
    id: title
    _svc_id: id
  }
  second: todo(id: "2") {
    done
    _svc_id: id
  }
}`);
  });

  it('picks another prefix when a response key of the document starts with the first', () => {
    const prepared = prepare('{ todos { _svc_title: title author { _svc1_x: name } } }');
    expect(prepared.addedKeyPrefix).toBe('_svc2_');
    expect(prepared.query).toBe(`{
  todos {
    _svc_title: title
    author {
      _svc1_x: name
      _svc2_id: id
    }
    _svc2_id: id
  }
}`);
  });

  it('takes the first prefix no key starts with, each key ruling out the one it starts with only', () => {
    // `_svc01_` and `_svc1x` start with no prefix (attempts are written without leading zeros, and
    // end in `_`); `_svc12_a` starts with `_svc12_`, not `_svc1_`.
    expect(prepare('{ todos { _svc_a: title _svc01_: title _svc1x: title _svc12_a: title } }').addedKeyPrefix).toBe('_svc1_');
    // Keys that rule out the first 100,000 prefixes, in any order: each is looked at once. Tried
    // against every key, the prefixes cost 5 billion comparisons here (README, Bad input).
    const keys = Array.from({ length: 100_000 }, (_, index) => (index === 0 ? '_svc_' : `_svc${100_000 - index}_`));
    expect(prepare(`{ ${keys.map((key) => `${key}: time`).join(' ')} }`).addedKeyPrefix).toBe('_svc100000_');
  });

  it.each([
    ['the key field of object types', '{ todos { id title author { id } } }'],
    ['the key field under an alias of the client\'s', '{ todos { todoId: id } }'],
    ['__typename and the key of an interface', '{ node(id: "1") { __typename id } }'],
    ['__typename and keys of a union through fragments', '{ search(text: "a") { __typename ... on Node { id } ... on Product { sku } } }'],
    ['a key under @include(if: true) and @skip(if: false)', '{ todos { id @include(if: true) author { id @skip(if: false) } } }'],
    ['only fields without a selection', '{ time }'],
    ['introspection', '{ __typename __schema { types { name } } }'],
  ])('rewrites nothing when the client already selects everything needed: %s', (_case, query) => {
    const prepared = prepare(query);
    expect(prepared.rewritten).toBe(false);
    expect(prepared.query).toBe(print(parse(query)));
  });

  it('returns the document it was given when nothing is rewritten', () => {
    const document = parse('{ todos { id } }');
    expect(prepareOperation(schema, document, keyFields).document).toBe(document);
  });

  it('adds to the fields inside named fragments, and nothing where a fragment already selects the key', () => {
    const query = `query Todo {
  todo(id: "1") { ...TodoParts }
  node(id: "u1") { ...NodeId }
}
fragment TodoParts on Todo { title author { name } }
fragment NodeId on Node { id __typename }`;
    expect(prepare(query).query).toBe(`query Todo {
  todo(id: "1") {
    ...TodoParts
    _svc_id: id
  }
  node(id: "u1") {
    ...NodeId
  }
}

fragment TodoParts on Todo {
  title
  author {
    name
    _svc_id: id
  }
}

fragment NodeId on Node {
  id
  __typename
}`);
  });

  it('counts a key selected in an inline fragment only for the types that fragment applies to', () => {
    expect(prepare('{ node(id: "1") { ... on Todo { id title } } }').query).toBe(`{
  node(id: "1") {
    ... on Todo {
      id
      title
    }
    _svc_typename: __typename
    _svc_id: id
  }
}`);
    expect(prepare('{ todo(id: "1") { ... on Todo { id } ... { author { ... on Node { id } } } } }').rewritten).toBe(false);
  });

  it('adds __typename and the interface\'s own key field to interface selections', () => {
    expect(prepare('{ node(id: "1") { ... on User { name } } }').query).toBe(`{
  node(id: "1") {
    ... on User {
      name
    }
    _svc_typename: __typename
    _svc_id: id
  }
}`);
  });

  it('adds __typename and an inline fragment per possible type with a key to union selections', () => {
    expect(prepare('{ search(text: "a") { ... on Todo { title } ... on Product { sku } } }').query).toBe(`{
  search(text: "a") {
    ... on Todo {
      title
    }
    ... on Product {
      sku
    }
    _svc_typename: __typename
    ... on Todo {
      _svc_id: id
    }
    ... on User {
      _svc_id: id
    }
  }
}`);
  });

  it('does not rely on client fields that @include or @skip may leave out, and adds inside conditional fields', () => {
    const query = `query Todos($withIds: Boolean!, $skipAuthor: Boolean!) {
  todos {
    id @include(if: $withIds)
    author @skip(if: $skipAuthor) { id @skip(if: $skipAuthor) name }
    ... on Todo @include(if: $withIds) { title }
  }
}`;
    expect(prepare(query).query).toBe(`query Todos($withIds: Boolean!, $skipAuthor: Boolean!) {
  todos {
    id @include(if: $withIds)
    author @skip(if: $skipAuthor) {
      id @skip(if: $skipAuthor)
      name
      _svc_id: id
    }
    ... on Todo @include(if: $withIds) {
      title
    }
    _svc_id: id
  }
}`);
  });

  it('rewrites mutations, whose responses automatic invalidation reads', () => {
    const query = 'mutation Add { addTodo(title: "Call mum") { title author { name } } updateProduct(sku: "sku-1", price: 3) { price } }';
    expect(prepare(query).query).toBe(`mutation Add {
  addTodo(title: "Call mum") {
    title
    author {
      name
      _svc_id: id
    }
    _svc_id: id
  }
  updateProduct(sku: "sku-1", price: 3) {
    price
    _svc_sku: sku
  }
}`);
  });

  it('leaves a document that does not validate as it is, so the origin\'s errors refer to the client\'s text', () => {
    const prepared = prepare('{ todos { title nope } }');
    expect(prepared.rewritten).toBe(false);
    expect(prepared.query).toBe(`{
  todos {
    title
    nope
  }
}`);
  });

  it('leaves as it is a document that does not validate in ways the rewrite walks through (a fragment cycle, an unknown type)', () => {
    const cyclic = '{ todos { ...A } } fragment A on Todo { title ...A }';
    const unknownType = '{ todos { ... on Nope { title } title } }';
    for (const text of [cyclic, unknownType]) {
      const prepared = prepare(text);
      expect(prepared.rewritten).toBe(false);
      expect(prepared.query).toBe(print(parse(text)));
    }
  });

  it('remembers the preparation per document, schema and key fields', () => {
    const document = parse('{ todos { title } }');
    const prepared = prepareOperation(schema, document, keyFields);
    expect(prepareOperation(schema, document, keyFields)).toBe(prepared);
    expect(prepareOperation(schema, document, { defaults: ['id'], types: {} })).not.toBe(prepared);
  });

  it('gives key fields of different declared types different aliases, so the rewritten document stays valid', () => {
    const mixedSchema = buildSchema(`
      type Book { id: ID! title: String }
      type Film { id: ID title: String }
      type Track { id: Int! title: String }
      union Media = Book | Film | Track
      type Query { media: [Media!]! }
    `);
    const prepared = prepareOperation(mixedSchema, parse('{ media { ... on Book { title } } }'), keyFields);
    expect(prepared.query).toBe(`{
  media {
    ... on Book {
      title
    }
    _svc_typename: __typename
    ... on Book {
      _svc_id: id
    }
    ... on Film {
      _svc_id_2: id
    }
    ... on Track {
      _svc_id_3: id
    }
  }
}`);
    expect(validate(mixedSchema, prepared.document)).toEqual([]);
  });

  it('treats types without a key field as no entities, and keeps clear of a key field named "typename"', () => {
    const oddSchema = buildSchema(`
      type Tag { typename: String! label: String }
      type Page { label: String }
      union Item = Tag | Page
      type Query { items: [Item!]! page: Page }
    `);
    const prepared = prepareOperation(
      oddSchema,
      parse('{ items { ... on Page { label } } page { label } }'),
      { defaults: ['id'], types: { Tag: ['typename'] } },
    );
    expect(prepared.query).toBe(`{
  items {
    ... on Page {
      label
    }
    _svc_typename: __typename
    ... on Tag {
      _svc_typename_2: typename
    }
  }
  page {
    label
  }
}`);
  });
});

describe('stripAddedFields', () => {
  it('returns the very same Buffer when nothing was rewritten', () => {
    const body = Buffer.from('{"data":{"todos":[{"id":"1"}]}}');
    expect(stripAddedFields(prepare('{ todos { id } }'), body)).toBe(body);
  });

  it('cuts exactly the added members out of data, at every depth', () => {
    expect(
      strip(
        '{ todos { title author { name } } }',
        '{"data":{"todos":[{"title":"Buy milk","author":{"name":"Alice","_svc_id":"u1"},"_svc_id":"1"},' +
          '{"title":"Walk","author":null,"_svc_id":"3"}]}}',
      ),
    ).toBe('{"data":{"todos":[{"title":"Buy milk","author":{"name":"Alice"}},{"title":"Walk","author":null}]}}');
  });

  it('keeps the client\'s own field aliased as the key', () => {
    expect(strip('{ todo(id: "1") { id: title } }', '{"data":{"todo":{"id":"Buy milk","_svc_id":"1"}}}')).toBe(
      '{"data":{"todo":{"id":"Buy milk"}}}',
    );
  });

  it('strips the __typename and inline-fragment keys added to unions and interfaces', () => {
    expect(
      strip(
        '{ search(text: "a") { ... on Todo { title } ... on Product { sku } } node(id: "u1") { ... on User { name } } }',
        '{"data":{"search":[{"title":"Buy milk","_svc_typename":"Todo","_svc_id":"1"},{"_svc_typename":"User","_svc_id":"u1"},' +
          '{"sku":"sku-1","_svc_typename":"Product"}],"node":{"name":"Alice","_svc_typename":"User","_svc_id":"u1"}}}',
      ),
    ).toBe('{"data":{"search":[{"title":"Buy milk"},{},{"sku":"sku-1"}],"node":{"name":"Alice"}}}');
  });

  it('follows named fragments and fields left out by @skip', () => {
    const query = `query ($skip: Boolean!) { todo(id: "1") { ...Parts } todos @skip(if: $skip) { title } }
fragment Parts on Todo { author { name } }`;
    expect(strip(query, '{"data":{"todo":{"author":{"name":"Alice","_svc_id":"u1"},"_svc_id":"1"}}}')).toBe(
      '{"data":{"todo":{"author":{"name":"Alice"}}}}',
    );
  });

  it('leaves errors, extensions and every other byte as the origin wrote them', () => {
    const body = `{
  "errors": [{"message": "partial", "path": ["todos", 1, "_svc_id"], "extensions": {"_svc_id": 1}}],
  "data": {
    "todos": [
      {"_svc_id": "1", "title": "caf\\u00e9 \\"milk\\"", "done": false},
      {"title": "1.0e3", "_svc_id": "2"}
    ]
  },
  "extensions": {"cost": 1.50}
}`;
    expect(strip('{ todos { title } }', body)).toBe(`{
  "errors": [{"message": "partial", "path": ["todos", 1, "_svc_id"], "extensions": {"_svc_id": 1}}],
  "data": {
    "todos": [
      {"title": "caf\\u00e9 \\"milk\\"", "done": false},
      {"title": "1.0e3"}
    ]
  },
  "extensions": {"cost": 1.50}
}`);
  });

  it('works out what to strip once per plan node, not once per path of the answer (README, Bad input)', () => {
    // Two aliases of `author` at each of 12 levels merge the same selections: the plan has a node
    // per level, the answer 2^12 paths. Worked out per path, what to strip was kept per path too.
    const levels = 12;
    const fragments = Array.from(
      { length: levels },
      (_, level) => `fragment T${level} on Todo { x: author { ...U${level} } y: author { ...U${level} } } fragment U${level} on User { name todos { ...T${level + 1} } }`,
    );
    const query = `{ todo(id: "1") { ...T0 } } ${fragments.join(' ')} fragment T${levels} on Todo { title }`;
    const answer = (level: number, added: boolean): unknown => {
      const key = added ? { _svc_id: `t${level}` } : {};
      if (level === levels) return { title: 'leaf', ...key };
      const user = { name: 'Alice', todos: [answer(level + 1, added)], ...(added ? { _svc_id: 'u1' } : {}) };
      return { x: user, y: user, ...key };
    };
    const prepared = prepare(query);
    const planned = vi.spyOn(SelectionPlan.prototype, 'child');
    try {
      const body = JSON.stringify({ data: { todo: answer(0, true) } });
      expect(stripAddedFields(prepared, Buffer.from(body)).toString()).toBe(JSON.stringify({ data: { todo: answer(0, false) } }));
      expect(planned.mock.calls.length).toBeLessThanOrEqual(4 * levels + 2);
    } finally {
      planned.mockRestore();
    }
  });

  it('returns the same Buffer when there is nothing to cut: no data, or a body that is not JSON', () => {
    const prepared = prepare('{ todos { title } }');
    for (const text of ['{"errors":[{"message":"boom"}]}', '{"data":null}', '<html>Bad gateway</html>', '{"data":{"todos":[{"title":"x"']) {
      const body = Buffer.from(text);
      expect(stripAddedFields(prepared, body)).toBe(body);
    }
  });
});
