import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListOrigin } from '../support/listOrigin.js';
import { postGraphQL, type DemoOrigin } from '../support/origin.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from '../support/redis.js';
import { startStack, type ConfigInput, type Stack } from '../support/stack.js';

/**
 * `mutationPolicy: List` with argument-aware lists (issue 15, part 4; README, Invalidation after
 * mutations), through the gateway, on the memory store and on Redis: a mutation invalidates the
 * cached lists its object is compatible with, by the lists' arguments and the object's fields.
 */

const ADMINS = '{ usersByRole(role: admin) { name } }';
const GUESTS = '{ usersByRole(role: guest) { name } }';
const USERS = '{ users { name } }';
const ADMINS_PAGE = '{ usersByRole(role: admin, first: 1, after: "u1") { name } }';
const GUESTS_PAGE = '{ usersByRole(role: guest, first: 1) { name } }';
const TEAM_1 = '{ usersByTeam(team: "t1") { name } }';
const TEAM_2 = '{ usersByTeam(team: "t2") { name } }';
const PARIS = '{ usersAt(location: { city: "Paris", country: "FR" }) { name } }';
const PARIS_TEXAS = '{ usersAt(location: { city: "Paris", country: "US" }) { name } }';
const BERLIN = '{ usersAt(location: { city: "Berlin", country: "DE" }) { name } }';
const ADMINS_OF_TEAM_2 = 'query ($role: Role, $team: ID) { usersByRoleAndTeam(role: $role, teamId: $team) { name } }';

interface Read {
  query: string;
  variables?: Record<string, unknown>;
}

async function statuses(stack: Stack, reads: Array<string | Read>): Promise<string[]> {
  const found: string[] = [];
  for (const read of reads) {
    const { query, variables } = typeof read === 'string' ? { query: read, variables: undefined } : read;
    found.push((await postGraphQL(stack.url, { query, ...(variables ? { variables } : {}) })).headers['svc-cache']!);
  }
  return found;
}

async function warm(stack: Stack, reads: Array<string | Read>): Promise<void> {
  expect(await statuses(stack, reads)).toEqual(reads.map(() => 'MISS'));
  expect(await statuses(stack, reads)).toEqual(reads.map(() => 'HIT'));
}

async function addUser(stack: Stack, fields: string): Promise<string> {
  const added = await postGraphQL(stack.url, { query: `mutation { addUser(name: "Cy", ${fields}) { name } }` });
  expect(added.headers['svc-cache']).toBe('PASS');
  return added.text;
}

describe.each(['memory', 'redis'] as const)('argument-aware List invalidation, %s store', (store) => {
  let redis: RedisServer | undefined;
  let origin: DemoOrigin;
  const stacks: Stack[] = [];

  async function stackWith(input: ConfigInput): Promise<Stack> {
    origin.reset();
    const redisConfig = redis && { redis: { url: redis.url, keyPrefix: `lists-${stacks.length}:`, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS } };
    const stack = await startStack({ mutationPolicy: 'List', ...redisConfig, ...input }, { origin });
    stacks.push(stack);
    return stack;
  }

  beforeAll(async () => {
    if (store === 'redis') redis = await startRedisServer();
    origin = await startListOrigin();
  });
  afterAll(async () => {
    for (const stack of stacks) await stack.close();
    await origin.close();
    await redis?.stop();
  });

  it('creating an admin empties the admins\' list and every unnarrowed one, not the guests\' (graphql-yoga #3125)', async () => {
    const stack = await stackWith({});
    await warm(stack, [ADMINS, GUESTS, USERS]);
    // The fields svc-cache added to name the user's lists are cut out of the answer.
    expect(await addUser(stack, 'role: admin')).toBe('{"data":{"addUser":{"name":"Cy"}}}');
    expect(await statuses(stack, [ADMINS, GUESTS, USERS])).toEqual(['MISS', 'HIT', 'MISS']);
    expect((await postGraphQL(stack.url, { query: ADMINS })).text).toBe('{"data":{"usersByRole":[{"name":"Ada"},{"name":"Cy"}]}}');
    const forwarded = origin.requests.filter((request) => request.body.includes('addUser'));
    expect(JSON.parse(forwarded.at(-1)!.body)).toEqual({
      query:
        'mutation {\n  addUser(name: "Cy", role: admin) {\n    name\n    _svc_id: id\n    _svc_role: role\n    _svc_teamId: teamId\n    _svc_location: location {\n      city\n      country\n    }\n  }\n}',
    });
  });

  it('pagination arguments do not narrow; narrowing arguments read through variables do', async () => {
    const stack = await stackWith({});
    const adminsOfTeam2 = { query: ADMINS_OF_TEAM_2, variables: { role: 'admin', team: 't2' } };
    const guestsOfTeam2 = { query: ADMINS_OF_TEAM_2, variables: { role: 'guest', team: 't2' } };
    const adminsOfAnyTeam = { query: ADMINS_OF_TEAM_2, variables: { role: 'admin', team: null } };
    await warm(stack, [ADMINS_PAGE, GUESTS_PAGE, adminsOfTeam2, guestsOfTeam2, adminsOfAnyTeam]);
    await addUser(stack, 'role: admin, teamId: "t1"');
    expect(await statuses(stack, [ADMINS_PAGE, GUESTS_PAGE, adminsOfTeam2, guestsOfTeam2, adminsOfAnyTeam])).toEqual([
      'MISS',
      'HIT',
      'HIT',
      'HIT',
      'MISS',
    ]);
  });

  it('an input-object argument narrows only to objects whose field equals it', async () => {
    const stack = await stackWith({});
    await warm(stack, [PARIS, PARIS_TEXAS, BERLIN]);
    await addUser(stack, 'role: guest, location: { country: "FR", city: "Paris" }');
    expect(await statuses(stack, [PARIS, PARIS_TEXAS, BERLIN])).toEqual(['MISS', 'HIT', 'HIT']);
    expect((await postGraphQL(stack.url, { query: PARIS })).text).toBe('{"data":{"usersAt":[{"name":"Ada"},{"name":"Cy"}]}}');
  });

  it('listArguments.fields maps an argument to a field of another name; without it the argument does not narrow', async () => {
    const mapped = await stackWith({ listArguments: { fields: { 'Query.usersByTeam.team': 'User.teamId' } } });
    await warm(mapped, [TEAM_1, TEAM_2]);
    await addUser(mapped, 'role: guest, teamId: "t1"');
    expect(await statuses(mapped, [TEAM_1, TEAM_2])).toEqual(['MISS', 'HIT']);

    const unmapped = await stackWith({});
    await warm(unmapped, [TEAM_1, TEAM_2]);
    await addUser(unmapped, 'role: guest, teamId: "t1"');
    expect(await statuses(unmapped, [TEAM_1, TEAM_2])).toEqual(['MISS', 'MISS']);
  });

  it('addTodo on the demo origin empties the todo lists it fits: todos and todos(done: false), not todos(done: true)', async () => {
    const redisConfig = redis && { redis: { url: redis.url, keyPrefix: 'lists-demo:', commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS } };
    const stack = await startStack({ mutationPolicy: 'List', ...redisConfig });
    stacks.push(stack);
    const lists = ['{ todos { title } }', '{ todos(done: false) { title } }', '{ todos(done: true) { title } }', '{ users { name } }'];
    await warm(stack, lists);
    const add = await postGraphQL(stack.url, { query: 'mutation { addTodo(title: "New") { title } }' });
    expect(add.text).toBe('{"data":{"addTodo":{"title":"New"}}}');
    expect(await statuses(stack, lists)).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
  });

  it('moving a setting, a type without a key field, from guest to admin empties the guests\' list it left too', async () => {
    const stack = await stackWith({});
    const guests = '{ settingsByRole(role: guest) { name role } }';
    const admins = '{ settingsByRole(role: admin) { name role } }';
    await warm(stack, [guests, admins]);
    const moved = await postGraphQL(stack.url, { query: 'mutation { setRole(name: "theme", role: admin) { name role } }' });
    expect([moved.headers['svc-cache'], moved.text]).toEqual(['PASS', '{"data":{"setRole":{"name":"theme","role":"admin"}}}']);
    expect(await statuses(stack, [guests, admins])).toEqual(['MISS', 'MISS']);
    expect((await postGraphQL(stack.url, { query: guests })).text).toBe('{"data":{"settingsByRole":[]}}');
  });

  it('mode any keeps every list of the type', async () => {
    const stack = await stackWith({ listArguments: { mode: 'any' } });
    await warm(stack, [ADMINS, GUESTS, PARIS, BERLIN]);
    expect(await addUser(stack, 'role: admin')).toBe('{"data":{"addUser":{"name":"Cy"}}}');
    expect(await statuses(stack, [ADMINS, GUESTS, PARIS, BERLIN])).toEqual(['MISS', 'MISS', 'MISS', 'MISS']);
    // Nothing was added to the mutation: `any` needs no field values.
    expect(JSON.parse(origin.requests.filter((request) => request.body.includes('addUser')).at(-1)!.body)).toEqual({
      query: 'mutation {\n  addUser(name: "Cy", role: admin) {\n    name\n    _svc_id: id\n  }\n}',
    });
  });
});
