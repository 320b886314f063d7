/**
 * A model of the demo origin's data and of what svc-cache may hold, for the isolation property
 * test: what the origin answers each query under given credentials, which tags an entry of it
 * carries (README, "mutationPolicy" and the purge API), and what each write changes and clears.
 * It is written from the documented behaviour, not from svc-cache's code.
 */

export type TodoId = '1' | '2' | '3';
export type UserId = 'u1' | 'u2';
export type Sku = 'sku-1' | 'sku-2';
export type MutationPolicy = 'None' | 'Entity' | 'List' | 'Type';
export type Scope = 'PUBLIC' | 'AUTHENTICATED' | 'SESSION';

export const TODO_IDS: readonly TodoId[] = ['1', '2', '3'];
export const USER_IDS: readonly UserId[] = ['u1', 'u2'];
export const SKUS: readonly Sku[] = ['sku-1', 'sku-2'];

/** Nothing the steps change: the demo seed (src/demo/data.ts). */
const TODO_FACTS: Record<TodoId, { done: boolean; author: UserId }> = {
  '1': { done: false, author: 'u1' },
  '2': { done: true, author: 'u2' },
  '3': { done: false, author: 'u1' },
};
const PRODUCT_NAMES: Record<Sku, string> = { 'sku-1': 'Coffee beans', 'sku-2': 'Green tea' };

/** What the steps change. */
export interface DemoState {
  titles: Record<TodoId, string>;
  names: Record<UserId, string>;
  prices: Record<Sku, number>;
}

export function seedState(): DemoState {
  return {
    titles: { '1': 'Buy milk', '2': 'Write the report', '3': 'Walk the dog' },
    names: { u1: 'Alice', u2: 'Bob' },
    prices: { 'sku-1': 12.5, 'sku-2': 4.25 },
  };
}

const tag = {
  entity: (type: string, key: string) => `entity ${type}:${key}`,
  type: (type: string) => `type ${type}`,
  list: (type: string) => `list ${type}`,
  query: (field: string) => `query ${field}`,
  operation: (name: string) => `operation ${name}`,
};

const todoTags = (ids: readonly TodoId[]) => [...ids.map((id) => tag.entity('Todo', id)), tag.type('Todo')];
const userTags = (ids: readonly UserId[]) => [...ids.map((id) => tag.entity('User', id)), tag.type('User')];
const todosOf = (user: UserId) => TODO_IDS.filter((id) => TODO_FACTS[id].author === user);

export interface QueryCase {
  text: string;
  scope: Scope;
  /** The `data` the origin answers; absent for `time`, which is new on every origin call. */
  data?: (state: DemoState, viewer: UserId | null) => unknown;
  /** What an entry of this query holds, for the user the request signs in as. */
  tags: (viewer: UserId | null) => string[];
  /** Also in the USER scope: keyed on the verified `sub` of the `x-user-token` JWT (README, Scopes). */
  userToken?: true;
}

export const QUERIES = {
  todos: {
    text: '{ todos { id title done } }',
    scope: 'PUBLIC',
    data: (state) => ({ todos: TODO_IDS.map((id) => ({ id, title: state.titles[id], done: TODO_FACTS[id].done })) }),
    tags: () => [tag.query('todos'), ...todoTags(TODO_IDS), tag.list('Todo')],
  },
  todoTitles: {
    text: 'query TodoTitles { todos { id title } }',
    scope: 'PUBLIC',
    data: (state) => ({ todos: TODO_IDS.map((id) => ({ id, title: state.titles[id] })) }),
    tags: () => [tag.operation('TodoTitles'), tag.query('todos'), ...todoTags(TODO_IDS), tag.list('Todo')],
  },
  todosWithAuthors: {
    text: '{ todos { title author { name } } }',
    scope: 'PUBLIC',
    data: (state) => ({
      todos: TODO_IDS.map((id) => ({ title: state.titles[id], author: { name: state.names[TODO_FACTS[id].author] } })),
    }),
    tags: () => [tag.query('todos'), ...todoTags(TODO_IDS), tag.list('Todo'), ...userTags(USER_IDS)],
  },
  todo1: todoQuery('1'),
  todo3: todoQuery('3'),
  node2: {
    text: '{ node(id: "2") { id ... on Todo { title } } }',
    scope: 'PUBLIC',
    data: (state) => ({ node: { id: '2', title: state.titles['2'] } }),
    tags: () => [tag.query('node'), ...todoTags(['2'])],
  },
  users: {
    text: '{ users { id name } }',
    scope: 'PUBLIC',
    data: (state) => ({ users: USER_IDS.map((id) => ({ id, name: state.names[id] })) }),
    tags: () => [tag.query('users'), ...userTags(USER_IDS), tag.list('User')],
  },
  product1: productQuery('sku-1'),
  product2: productQuery('sku-2'),
  products: {
    text: '{ products { sku price } }',
    scope: 'PUBLIC',
    data: (state) => ({ products: SKUS.map((sku) => ({ sku, price: state.prices[sku] })) }),
    tags: () => [
      tag.query('products'),
      ...SKUS.map((sku) => tag.entity('Product', sku)),
      tag.type('Product'),
      tag.list('Product'),
    ],
  },
  me: {
    text: '{ me { id name } }',
    scope: 'AUTHENTICATED',
    data: (state, viewer) => ({ me: viewer === null ? null : { id: viewer, name: state.names[viewer] } }),
    // A null `me` is a place a User could appear, so it carries the type (README: "type ... a null field").
    tags: (viewer) => [tag.query('me'), ...userTags(viewer === null ? [] : [viewer])],
  },
  meWithTodos: {
    text: '{ me { id todos { id title } } }',
    scope: 'AUTHENTICATED',
    data: (state, viewer) => ({
      me: viewer === null ? null : { id: viewer, todos: todosOf(viewer).map((id) => ({ id, title: state.titles[id] })) },
    }),
    tags: (viewer) =>
      viewer === null
        ? [tag.query('me'), tag.type('User')]
        : [tag.query('me'), ...userTags([viewer]), ...todoTags(todosOf(viewer)), tag.list('Todo')],
  },
  time: {
    text: '{ time }',
    scope: 'SESSION',
    userToken: true,
    tags: () => [tag.query('time')],
  },
} satisfies Record<string, QueryCase>;

export type QueryName = keyof typeof QUERIES;
export const QUERY_NAMES = Object.keys(QUERIES) as QueryName[];

function todoQuery(id: TodoId): QueryCase {
  return {
    text: `{ todo(id: "${id}") { id title } }`,
    scope: 'PUBLIC',
    data: (state) => ({ todo: { id, title: state.titles[id] } }),
    tags: () => [tag.query('todo'), ...todoTags([id])],
  };
}

function productQuery(sku: Sku): QueryCase {
  return {
    text: `{ product(sku: "${sku}") { sku name price } }`,
    scope: 'PUBLIC',
    data: (state) => ({ product: { sku, name: PRODUCT_NAMES[sku], price: state.prices[sku] } }),
    tags: () => [tag.query('product'), tag.entity('Product', sku), tag.type('Product')],
  };
}

/** Authorization header lines, and whom the origin signs them in as (it reads the first line). */
export const AUTHORIZATIONS = {
  absent: { lines: [], viewer: null },
  'Bearer alice': { lines: ['Bearer alice'], viewer: 'u1' },
  'Bearer bob': { lines: ['Bearer bob'], viewer: 'u2' },
  // Another bucket than `Bearer alice`, the same user at the origin.
  'bearer alice': { lines: ['bearer alice'], viewer: 'u1' },
  'Bearer mallory': { lines: ['Bearer mallory'], viewer: null },
  empty: { lines: [''], viewer: null },
  // What a JavaScript client's template makes of a missing token: a bucket every client may share.
  'Bearer null': { lines: ['Bearer null'], viewer: null },
  'Bearer bob, then Bearer alice': { lines: ['Bearer bob', 'Bearer alice'], viewer: 'u2' },
} satisfies Record<string, { lines: string[]; viewer: UserId | null }>;
export type AuthorizationName = keyof typeof AUTHORIZATIONS;

/** Cookie headers, and the session cookie each carries. */
export const COOKIES = {
  absent: { header: null, session: null },
  s1: { header: 'session=s1', session: 's1' },
  s2: { header: 'session=s2', session: 's2' },
  'empty session': { header: 'session=', session: '' },
  'no session': { header: 'theme=dark', session: null },
  's1 among others': { header: 'theme=dark; session=s1', session: 's1' },
} satisfies Record<string, { header: string | null; session: string | null }>;
export type CookieName = keyof typeof COOKIES;

/**
 * `x-user-token` JWTs (the test signs them): a valid one keys the USER scope on its `sub`, so a
 * refreshed token shares its user's bucket; one that fails verification makes the request PASS.
 */
export const USER_TOKENS = {
  absent: { sub: null, valid: true },
  alice: { sub: 'alice', valid: true },
  'alice refreshed': { sub: 'alice', valid: true },
  bob: { sub: 'bob', valid: true },
  'alice forged with a wrong signature': { sub: 'alice', valid: false },
  'alice with alg none': { sub: 'alice', valid: false },
  'alice expired': { sub: 'alice', valid: false },
} satisfies Record<string, { sub: string | null; valid: boolean }>;
export type UserTokenName = keyof typeof USER_TOKENS;

export interface Read {
  query: QueryName;
  authorization: AuthorizationName;
  cookie: CookieName;
  userToken: UserTokenName;
}

export type Write =
  | { kind: 'renameTodo'; todo: TodoId; selectAuthor: boolean }
  | { kind: 'renameMissingTodo' }
  | { kind: 'repriceProduct'; sku: Sku }
  | { kind: 'renameUser'; user: UserId }
  | { kind: 'purge'; purge: PurgeName; token: 'valid' | 'wrong' };

export type MutationWrite = Exclude<Write, { kind: 'purge' }>;

export interface PurgeCase {
  text: string;
  /** The purge fields in order, each answering `true`. */
  fields: string[];
  /** The tags it clears; 'all' for `_purgeAll`. */
  clears: string[] | 'all';
  /**
   * `soft: true`: what it clears is marked stale instead of removed (README, Purge API). Within
   * `swr` the first request refreshes it while requests arriving meanwhile may get the stale answer.
   */
  soft?: true;
  /**
   * Written with empty parentheses (`_purgeUser()`), a GraphQL syntax error that svc-cache reads as a
   * purge only with a valid token: with a wrong one it is no purge, and the origin answers it.
   */
  parsesOnlyWithToken?: true;
}

export const PURGES = {
  all: { text: 'mutation { _purgeAll }', fields: ['_purgeAll'], clears: 'all' },
  everyTodo: { text: 'mutation { _purgeTodo }', fields: ['_purgeTodo'], clears: [tag.type('Todo')] },
  everyUser: { text: 'mutation { _purgeUser }', fields: ['_purgeUser'], clears: [tag.type('User')] },
  everyProduct: { text: 'mutation { _purgeProduct }', fields: ['_purgeProduct'], clears: [tag.type('Product')] },
  todo2: { text: 'mutation { purgeTodo(id: "2") }', fields: ['purgeTodo'], clears: [tag.entity('Todo', '2')] },
  todos1and3: {
    text: 'mutation { purgeTodo(id: ["1", "3"]) }',
    fields: ['purgeTodo'],
    clears: [tag.entity('Todo', '1'), tag.entity('Todo', '3')],
  },
  todoWithoutKey: { text: 'mutation { purgeTodo }', fields: ['purgeTodo'], clears: [tag.type('Todo')] },
  alice: { text: 'mutation { purgeUser(id: "u1") }', fields: ['purgeUser'], clears: [tag.entity('User', 'u1')] },
  sku2: {
    text: 'mutation { purgeProduct(sku: "sku-2") }',
    fields: ['purgeProduct'],
    clears: [tag.entity('Product', 'sku-2')],
  },
  queryTodos: {
    text: 'mutation { _purgeQuery(queries: [todos]) }',
    fields: ['_purgeQuery'],
    clears: [tag.query('todos')],
  },
  queryMeAndTime: {
    text: 'mutation { _purgeQuery(queries: [me, time]) }',
    fields: ['_purgeQuery'],
    clears: [tag.query('me'), tag.query('time')],
  },
  queryProductAndNode: {
    text: 'mutation { _purgeQuery(queries: [product, node]) }',
    fields: ['_purgeQuery'],
    clears: [tag.query('product'), tag.query('node')],
  },
  operation: {
    text: 'mutation { _purgeOperationName(names: ["TodoTitles"]) }',
    fields: ['_purgeOperationName'],
    clears: [tag.operation('TodoTitles')],
  },
  bobAndUsers: {
    text: 'mutation { purgeUser(id: "u2") _purgeQuery(queries: [users]) }',
    fields: ['purgeUser', '_purgeQuery'],
    clears: [tag.entity('User', 'u2'), tag.query('users')],
  },
  everyUserWithParentheses: {
    text: 'mutation { _purgeUser() }',
    fields: ['_purgeUser'],
    clears: [tag.type('User')],
    parsesOnlyWithToken: true,
  },
  todo3ByType: {
    text: 'mutation { _purgeType(type: "Todo", keyFields: [{ name: "id", value: "3" }]) }',
    fields: ['_purgeType'],
    clears: [tag.entity('Todo', '3')],
  },
  allSoftly: { text: 'mutation { _purgeAll(soft: true) }', fields: ['_purgeAll'], clears: 'all', soft: true },
  everyTodoSoftly: { text: 'mutation { _purgeTodo(soft: true) }', fields: ['_purgeTodo'], clears: [tag.type('Todo')], soft: true },
  aliceSoftly: {
    text: 'mutation { purgeUser(id: "u1", soft: true) }',
    fields: ['purgeUser'],
    clears: [tag.entity('User', 'u1')],
    soft: true,
  },
  sku1SoftlyByType: {
    text: 'mutation { _purgeType(type: "Product", keyFields: [{ name: "sku", value: "sku-1" }], soft: true) }',
    fields: ['_purgeType'],
    clears: [tag.entity('Product', 'sku-1')],
    soft: true,
  },
  queryMeAndTimeSoftly: {
    text: 'mutation { _purgeQuery(queries: [me, time], soft: true) }',
    fields: ['_purgeQuery'],
    clears: [tag.query('me'), tag.query('time')],
    soft: true,
  },
} satisfies Record<string, PurgeCase>;

export type PurgeName = keyof typeof PURGES;
export const PURGE_NAMES = Object.keys(PURGES) as PurgeName[];

/** A mutation as sent: what the origin changes and answers, and the objects its answer returns. */
export interface MutationCase {
  text: string;
  answer: unknown;
  apply(state: DemoState): void;
  returned: Array<{ type: string; key: string }>;
}

/** `label` makes every new title, name and price unique, so that stale data cannot pass for fresh. */
export function mutationCase(write: MutationWrite, label: number, state: DemoState): MutationCase {
  switch (write.kind) {
    case 'renameTodo': {
      const title = `Title ${label}`;
      const author = TODO_FACTS[write.todo].author;
      const apply = (next: DemoState) => {
        next.titles[write.todo] = title;
      };
      return write.selectAuthor
        ? {
            text: `mutation { updateTodo(id: "${write.todo}", title: "${title}") { title author { name } } }`,
            answer: { updateTodo: { title, author: { name: state.names[author] } } },
            apply,
            returned: [
              { type: 'Todo', key: write.todo },
              { type: 'User', key: author },
            ],
          }
        : {
            text: `mutation { updateTodo(id: "${write.todo}", title: "${title}") { id title } }`,
            answer: { updateTodo: { id: write.todo, title } },
            apply,
            returned: [{ type: 'Todo', key: write.todo }],
          };
    }
    case 'renameMissingTodo':
      return {
        text: `mutation { updateTodo(id: "404", title: "Title ${label}") { id title } }`,
        answer: { updateTodo: null },
        apply: () => undefined,
        returned: [],
      };
    case 'repriceProduct': {
      const price = label + 0.25;
      return {
        text: `mutation { updateProduct(sku: "${write.sku}", price: ${price}) { sku price } }`,
        answer: { updateProduct: { sku: write.sku, price } },
        apply: (next) => {
          next.prices[write.sku] = price;
        },
        returned: [{ type: 'Product', key: write.sku }],
      };
    }
    case 'renameUser': {
      const name = `Name ${label}`;
      return {
        text: `mutation { updateUser(id: "${write.user}", name: "${name}") { id name } }`,
        answer: { updateUser: { id: write.user, name } },
        apply: (next) => {
          next.names[write.user] = name;
        },
        returned: [{ type: 'User', key: write.user }],
      };
    }
  }
}

/** README, `mutationPolicy`: what a mutation's answer clears. */
export function mutationClears(policy: MutationPolicy, returned: MutationCase['returned']): string[] {
  const entities = returned.map((object) => tag.entity(object.type, object.key));
  const types = [...new Set(returned.map((object) => object.type))];
  switch (policy) {
    case 'None':
      return [];
    case 'Entity':
      return entities;
    case 'List':
      return [...entities, ...types.map(tag.list)];
    case 'Type':
      return types.map(tag.type);
  }
}

/** A read placed in the model: its cache key, its entry's tags and what the origin answers. */
export interface ResolvedRead {
  read: Read;
  /** Query and scope bucket: the model's cache key. */
  key: string;
  tags: ReadonlySet<string>;
  /**
   * Passes uncached: a PUBLIC query with credentials, a scoped one in its bucket of "no value" (or
   * of an empty value) with credentials its scopes do not read, or a user token that fails verification.
   */
  passes: boolean;
  /** The body the origin answers with this data; undefined for `time`. */
  answer: (state: DemoState) => string | undefined;
}

export function resolveRead(read: Read): ResolvedRead {
  const query: QueryCase = QUERIES[read.query];
  const authorization = AUTHORIZATIONS[read.authorization];
  const cookie = COOKIES[read.cookie];
  const userToken: { sub: string | null; valid: boolean } = USER_TOKENS[read.userToken];
  const bucket =
    query.scope === 'AUTHENTICATED'
      ? JSON.stringify(authorization.lines)
      : query.scope === 'SESSION'
        ? JSON.stringify(query.userToken ? [cookie.session, userToken.sub] : cookie.session)
        : '';
  // An empty header names no one (Apollo's auth link sends `authorization: ""` without a token).
  const sendsAuthorization = authorization.lines.join(', ').trim() !== '';
  const sendsCookie = cookie.header !== null && cookie.header.trim() !== '';
  const credentialedPublic = query.scope === 'PUBLIC' && (sendsAuthorization || sendsCookie);
  // A scope's share of "no value", or of an empty value, is shared too: a credential no scope reads
  // passes it (README, Scopes), and a cookie scope reads its own cookie only.
  const otherCookies = cookie.header !== null && cookie.header.split(';').some((pair) => pair.trim() !== '' && pair.split('=')[0]!.trim() !== 'session');
  const credentialedNoValue =
    query.scope === 'AUTHENTICATED'
      ? authorization.lines.every((line) => line.trim() === '' || line === 'Bearer null') && cookie.header !== null
      : query.scope === 'SESSION' &&
        (cookie.session === null || cookie.session === '' || (query.userToken === true && read.userToken === 'absent')) &&
        (sendsAuthorization || otherCookies);
  return {
    read,
    key: `${read.query} in ${query.scope}${query.userToken ? '+USER' : ''} ${bucket}`.trim(),
    tags: new Set(query.tags(authorization.viewer)),
    passes: credentialedPublic || credentialedNoValue || (query.userToken === true && !userToken.valid),
    answer: (state) => query.data && JSON.stringify({ data: query.data(state, authorization.viewer) }),
  };
}

/**
 * What the cache may hold for one query in one bucket. `certain`: it is there, so a read must HIT;
 * otherwise a write raced the fill and the entry may be gone, so a MISS is allowed too.
 */
export interface ModelEntry {
  bodies: ReadonlySet<string>;
  certain: boolean;
  read: ResolvedRead;
  /**
   * A soft purge marked it stale: a read refreshes it (MISS), and one sent while another read of the
   * same entry is in flight may get a stale body.
   */
  stale?: true;
}

export function clearsEntry(cleared: readonly string[] | 'all' | null, tags: ReadonlySet<string>): boolean {
  if (cleared === null) return false;
  return cleared === 'all' || cleared.some((clearedTag) => tags.has(clearedTag));
}
