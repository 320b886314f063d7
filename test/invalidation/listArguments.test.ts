import { buildSchema, execute, parse, print, type GraphQLObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { prepareOperation, stripAddedFields } from '../../src/invalidation/entityFields.js';
import { listArgumentIndex, MAX_NARROWING_ARGUMENTS } from '../../src/invalidation/listArguments.js';
import { mutationInvalidationTags, responseTags } from '../../src/invalidation/responseTags.js';
import { invalidationTag as tag } from '../../src/invalidation/tags.js';
import { connectionOrigin, connectionSchema } from '../support/connectionOrigin.js';
import { LIST_SCHEMA_SDL } from '../support/listOrigin.js';

/** Argument-aware list tags (README, Invalidation after mutations): what lists are tagged with, and what a mutation names. */

const schema = buildSchema(LIST_SCHEMA_SDL);
const keyFields = { defaults: ['id'], types: {} };
const MATCH = { mode: 'match' as const, fields: { 'Query.usersByTeam.team': 'User.teamId' } };
const index = listArgumentIndex(schema, MATCH, keyFields);
const User = schema.getType('User') as GraphQLObjectType;

const list = (coordinate: string, narrowed: Record<string, unknown> = {}): string =>
  tag.listField('User', coordinate, JSON.stringify(narrowed));

/** The list-field tags of a query's answer (a made-up answer: only the lists' presence matters). */
function listTagsOf(query: string, data: Record<string, unknown>, variables: Record<string, unknown> = {}): string[] {
  const prepared = prepareOperation(schema, parse(query), keyFields, index);
  return (responseTags(schema, prepared, { data }, '', variables) ?? []).filter((name) => name.startsWith('l:User:')).sort();
}

describe('list field tags of a stored answer', () => {
  it('names the arguments that are fields of the objects, and only those', () => {
    expect(listTagsOf('{ usersByRole(role: admin, first: 10, after: "u1") { name } }', { usersByRole: [] })).toEqual([
      list('Query.usersByRole', { role: 'admin' }),
    ]);
    expect(listTagsOf('{ users(first: 1) { name } }', { users: [] })).toEqual([list('Query.users')]);
  });

  it('reads arguments through variables, coerced as the origin reads them, and a mapped argument under its field', () => {
    const query = 'query ($role: Role, $team: ID) { usersByRoleAndTeam(role: $role, teamId: $team) { name } }';
    expect(listTagsOf(query, { usersByRoleAndTeam: null }, { role: 'guest', team: 7 })).toEqual([
      list('Query.usersByRoleAndTeam', { role: 'guest', teamId: '7' }),
    ]);
    expect(listTagsOf('{ usersByTeam(team: "t1") { name } }', { usersByTeam: [] })).toEqual([list('Query.usersByTeam', { team: 't1' })]);
  });

  it('does not narrow by a null, an incomplete input object, or variables that do not coerce', () => {
    expect(listTagsOf('{ usersByRoleAndTeam(role: null, teamId: "t1") { name } }', { usersByRoleAndTeam: [] })).toEqual([
      list('Query.usersByRoleAndTeam', { teamId: 't1' }),
    ]);
    const query = 'query ($role: Role) { usersByRoleAndTeam(role: $role) { name } }';
    expect(listTagsOf(query, { usersByRoleAndTeam: [] }, { role: 'nobody' })).toEqual([list('Query.usersByRoleAndTeam')]);
    const location = { city: 'Paris', country: 'FR' };
    expect(listTagsOf('{ usersAt(location: { country: "FR", city: "Paris" }) { name } }', { usersAt: [] })).toEqual([
      list('Query.usersAt', { location }),
    ]);
  });

  it('spells long argument values as a hash', () => {
    const name = 'x'.repeat(200);
    const [only] = listTagsOf(`{ usersWhere(name: "${name}") { id } }`, { usersWhere: [] });
    // usersWhere has more narrowing arguments than the bound: none narrows.
    expect(only).toBe(list('Query.usersWhere'));
    const wide = listArgumentIndex(schema, { mode: 'match', fields: {} }, keyFields);
    const prepared = prepareOperation(schema, parse('query ($role: Role, $team: ID) { usersByRoleAndTeam(role: $role, teamId: $team) { id } }'), keyFields, wide);
    const tags = responseTags(schema, prepared, { data: { usersByRoleAndTeam: [] } }, '', { role: 'admin', team: 'y'.repeat(200) })!;
    expect(tags.filter((name) => name.startsWith('l:User:'))).toEqual([expect.stringMatching(/^l:User:Query\.usersByRoleAndTeam:#[\w-]{43}$/)]);
  });

  it('never narrows by a custom scalar, which may answer in another spelling than it is given in', () => {
    const events = buildSchema('scalar DateTime type Event { id: ID! at: DateTime! day: String! } type Query { events(at: DateTime, day: String): [Event!]! }');
    const eventIndex = listArgumentIndex(events, MATCH, keyFields);
    const Event = events.getType('Event') as GraphQLObjectType;
    expect([...eventIndex.valueFields(Event).keys()]).toEqual(['day']);
    const values: Record<string, unknown> = { at: '2026-01-01T00:00:00.000Z', day: 'Mon' };
    expect(eventIndex.mutationTags(Event, (field) => values[field])).toEqual([
      tag.listField('Event', 'Query.events', '{}'),
      tag.listField('Event', 'Query.events', '{"day":"Mon"}'),
    ]);
  });

  it('adds no list field tags without an index', () => {
    const prepared = prepareOperation(schema, parse('{ users { id } }'), keyFields);
    expect(responseTags(schema, prepared, { data: { users: [] } }, '')).toEqual([tag.query('users'), tag.type('User'), tag.list('User')]);
  });
});

describe('what a mutation names', () => {
  it('one tag per subset of each list field\'s narrowing arguments, from the object\'s values', () => {
    const values: Record<string, unknown> = { role: 'admin', teamId: 't1', location: { city: 'Paris', country: 'FR', extra: 1 } };
    const tags = index.mutationTags(User, (field) => values[field])!;
    expect(tags.sort()).toEqual(
      [
        list('Query.users'),
        list('Query.usersByRole'),
        list('Query.usersByRole', { role: 'admin' }),
        list('Query.usersByTeam'),
        list('Query.usersByTeam', { team: 't1' }),
        list('Query.usersByRoleAndTeam'),
        list('Query.usersByRoleAndTeam', { role: 'admin' }),
        list('Query.usersByRoleAndTeam', { teamId: 't1' }),
        list('Query.usersByRoleAndTeam', { role: 'admin', teamId: 't1' }),
        list('Query.usersAt'),
        list('Query.usersAt', { location: { city: 'Paris', country: 'FR' } }),
        list('Query.usersWhere'),
      ].sort(),
    );
    expect(MAX_NARROWING_ARGUMENTS).toBe(4);
  });

  it('skips null values, and gives up when a needed value is missing', () => {
    const values: Record<string, unknown> = { role: 'guest', teamId: null, location: null };
    expect(index.mutationTags(User, (field) => values[field])).toContain(list('Query.usersByRoleAndTeam', { role: 'guest' }));
    expect(index.mutationTags(User, (field) => values[field])).not.toContain(list('Query.usersByTeam', { team: null }));
    expect(index.mutationTags(User, (field) => (field === 'role' ? 'guest' : undefined))).toBeUndefined();
  });

  it('asks the origin for the values under reserved aliases, and strips them from the answer', async () => {
    const prepared = prepareOperation(schema, parse('mutation { addUser(name: "Cy", role: admin) { name } }'), keyFields, index);
    expect(print(prepared.document)).toBe(
      'mutation {\n  addUser(name: "Cy", role: admin) {\n    name\n    _svc_id: id\n    _svc_role: role\n    _svc_teamId: teamId\n    _svc_location: location {\n      city\n      country\n    }\n  }\n}',
    );
    const body = JSON.stringify(await execute({ schema, document: prepared.document, rootValue: { addUser: { id: 'u3', name: 'Cy', role: 'admin', teamId: null, location: null } } }));
    expect(stripAddedFields(prepared, Buffer.from(body)).toString()).toBe('{"data":{"addUser":{"name":"Cy"}}}');
    const tags = mutationInvalidationTags(schema, prepared, JSON.parse(body), 'List');
    expect(tags).toContain(list('Query.usersByRole', { role: 'admin' }));
    expect(tags).not.toContain(list('Query.usersByRole', { role: 'guest' }));
    expect(tags).not.toContain(tag.list('User'));
  });

  it('reuses a value the client selected plainly, and adds nothing under other modes or to queries', () => {
    const prepared = prepareOperation(schema, parse('mutation { addUser(name: "Cy", role: admin) { role teamId location { city country } } }'), keyFields, index);
    expect(print(prepared.document)).toContain('role\n    teamId\n    location {\n      city\n      country\n    }\n    _svc_id: id\n    _svc_location: location {');
    const any = listArgumentIndex(schema, { mode: 'any', fields: {} }, keyFields);
    const anyMutation = prepareOperation(schema, parse('mutation { addUser(name: "Cy", role: admin) { id } }'), keyFields, any);
    expect(anyMutation.rewritten).toBe(false);
    expect(mutationInvalidationTags(schema, anyMutation, { data: { addUser: { id: 'u3' } } }, 'List')).toEqual([tag.entity('User', 'u3'), tag.unkeyed('User'), tag.list('User')]);
    expect(prepareOperation(schema, parse('{ user(id: "u1") { id } }'), keyFields, index).rewritten).toBe(false);
  });

  it('names every list of the type when the answer lacks the values (not rewritten, as in a batch), or has errors', () => {
    const prepared = prepareOperation(schema, parse('mutation { addUser(name: "Cy", role: admin) { id } }'), keyFields, index);
    expect(mutationInvalidationTags(schema, prepared, { data: { addUser: { id: 'u3' } } }, 'List')).toEqual([tag.entity('User', 'u3'), tag.unkeyed('User'), tag.list('User')]);
    // A failed field comes back null: the object may well have a team.
    const addUser = { id: 'u3', _svc_id: 'u3', _svc_role: 'admin', _svc_teamId: null, _svc_location: null };
    const errors = [{ message: 'team service down', path: ['addUser', '_svc_teamId'] }];
    expect(mutationInvalidationTags(schema, prepared, { data: { addUser }, errors }, 'List')).toEqual([tag.entity('User', 'u3'), tag.unkeyed('User'), tag.list('User')]);
    expect(mutationInvalidationTags(schema, prepared, { data: { addUser } }, 'List')).toContain(list('Query.usersByRole', { role: 'admin' }));
  });

  it('names every list of a type without a key field: a list the object left is named by no entity tag', () => {
    const guests = prepareOperation(schema, parse('{ settingsByRole(role: guest) { name role } }'), keyFields, index);
    const stored = responseTags(schema, guests, { data: { settingsByRole: [{ name: 'theme', role: 'guest' }] } }, '')!;
    expect(stored).toContain(tag.list('Setting'));
    const moved = prepareOperation(schema, parse('mutation { setRole(name: "theme", role: admin) { name role } }'), keyFields, index);
    // Nothing is added to ask for: the values would name only the lists the object is in now.
    expect(moved.rewritten).toBe(false);
    // And every answer holding the type: the mutation returns it, and no key names it.
    expect(mutationInvalidationTags(schema, moved, { data: { setRole: { name: 'theme', role: 'admin' } } }, 'List')).toEqual([tag.list('Setting'), tag.type('Setting')]);
  });

  it('never narrows by an argument listArguments.fields maps to null (a search, not an equality)', () => {
    const searching = listArgumentIndex(schema, { mode: 'match', fields: { 'Query.usersByRole.role': null } }, keyFields);
    expect(searching.valueFields(User).has('role')).toBe(true);
    const values: Record<string, unknown> = { role: 'admin', teamId: null, location: null };
    const tags = searching.mutationTags(User, (field) => values[field])!;
    expect(tags.filter((name) => name.includes('Query.usersByRole:'))).toEqual([list('Query.usersByRole')]);
  });
});

describe('Relay connections: a list of key-less edges is a list of their nodes, with the connection field\'s arguments', () => {
  const todoList = (coordinate: string, narrowed: Record<string, unknown> = {}): string => tag.listField('Todo', coordinate, JSON.stringify(narrowed));

  /** The list tags of the query's answer, and what creating a todo then names. */
  async function answered(query: string, mode: 'match' | 'any'): Promise<{ stored: string[]; mutated: string[] }> {
    const origin = connectionOrigin();
    const lists = listArgumentIndex(connectionSchema, { mode, fields: {} }, keyFields);
    const read = prepareOperation(connectionSchema, parse(query), keyFields, lists);
    const stored = responseTags(connectionSchema, read, JSON.parse(await origin(JSON.stringify({ query: print(read.document) }))), '')!;
    const add = prepareOperation(connectionSchema, parse('mutation { addTodo(title: "NEW") { id } }'), keyFields, lists);
    const mutated = mutationInvalidationTags(connectionSchema, add, JSON.parse(await origin(JSON.stringify({ query: print(add.document) }))), 'List');
    return { stored: stored.filter((name) => name.startsWith('l:')).sort(), mutated: mutated.sort() };
  }

  it('under mode match, tags a page with the connection field and its narrowing arguments, and a created todo names the pages it fits', async () => {
    const { stored, mutated } = await answered('{ todosConnection(done: false, first: 10) { edges { node { title } } } }', 'match');
    expect(stored).toEqual(
      [tag.list('Todo'), todoList('Query.todosConnection', { done: false }), tag.list('TodoEdge'), tag.listField('TodoEdge', 'TodoConnection.edges', '{}')].sort(),
    );
    // The new todo is open: the open pages and every unnarrowed list of todos, not the done pages nor every edge list.
    expect(mutated).toEqual(
      [
        tag.entity('Todo', '3'),
        tag.unkeyed('Todo'),
        todoList('Query.todos'),
        todoList('User.todos'),
        todoList('Query.todosConnection'),
        todoList('Query.todosConnection', { done: false }),
        todoList('Query.archive'),
        // A Folder is no connection: its lists keep their own arguments, not those of the field returning it.
        todoList('Folder.children'),
      ].sort(),
    );
  });

  it("narrows a key-less object's lists by their own arguments, not by those of the field returning it, unless it is a connection", async () => {
    const schema = buildSchema(`
      type User { id: ID! name: String! }
      type Membership { role: String! user: User! }
      type Team { name: String! memberships: [Membership!]! }
      type Query { team(name: String!): Team }
      type Mutation { addUser(team: String!, name: String!): User }
    `);
    const rootValue = { team: { name: 'core', memberships: [{ role: 'lead', user: { id: '1', name: 'ann' } }] }, addUser: { id: '2', name: 'bob' } };
    const index = listArgumentIndex(schema, { mode: 'match', fields: {} }, keyFields);
    const run = (query: string) => {
      const prepared = prepareOperation(schema, parse(query), keyFields, index);
      return { prepared, result: JSON.parse(JSON.stringify(execute({ schema, document: prepared.document, rootValue }))) as Record<string, unknown> };
    };
    const page = run('{ team(name: "core") { memberships { user { id name } } } }');
    const stored = responseTags(schema, page.prepared, page.result, '')!;
    const mutation = run('mutation { addUser(team: "core", name: "bob") { id name } }');
    const created = mutationInvalidationTags(schema, mutation.prepared, mutation.result, 'List');
    // team(name:) names the team, not its members: a new user reaches the page, whatever its name.
    expect(stored.filter((name) => created.includes(name))).toEqual([tag.listField('User', 'Team.memberships', '{}')]);
  });

  it('asks the origin for the created todo\'s done, which connection pages are narrowed by', () => {
    const lists = listArgumentIndex(connectionSchema, { mode: 'match', fields: {} }, keyFields);
    const add = prepareOperation(connectionSchema, parse('mutation { addTodo(title: "NEW") { id } }'), keyFields, lists);
    expect(print(add.document)).toBe('mutation {\n  addTodo(title: "NEW") {\n    id\n    _svc_done: done\n  }\n}');
  });

  it('under mode any, tags the nodes of a connection as in a list, which a created todo names', async () => {
    const { stored, mutated } = await answered('{ todosConnection(first: 1) { edges { node { title } } } }', 'any');
    // The type-wide list tags, which mode any names (the list field tags are the same as under match).
    expect(stored.filter((name) => name.split(':').length === 2)).toEqual([tag.list('Todo'), tag.list('TodoEdge')]);
    expect(mutated).toEqual([tag.entity('Todo', '3'), tag.list('Todo'), tag.unkeyed('Todo')]);
  });
});
