import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, graphql } from 'graphql';
import type { DemoOrigin, RecordedRequest } from './origin.js';

/**
 * An origin whose lists take arguments that name fields of their objects (issue 15, part 4), for
 * argument-aware list invalidation through the gateway: users by role (graphql-yoga #3125), by
 * team (the argument `team` names the field `teamId`), by location (an input object), with
 * pagination arguments, and a mutation that adds a user; and settings by role, a type without a
 * key field, with a mutation that moves a setting to another role. It answers as a GraphQL over HTTP origin
 * does, with graphql-js, and stands in for the demo origin in `startStack`.
 */

export const LIST_SCHEMA_SDL = `enum Role {
  admin
  guest
}

type Location {
  city: String!
  country: String!
}

input LocationInput {
  city: String!
  country: String!
}

type User {
  id: ID!
  name: String!
  role: Role!
  teamId: ID
  location: Location
}

"No key field: its objects are not entities."
type Setting {
  name: String!
  role: Role!
}

type Query {
  users(first: Int, after: ID): [User!]!
  usersByRole(role: Role!, first: Int, after: ID): [User!]!
  usersByTeam(team: ID!): [User!]!
  usersByRoleAndTeam(role: Role, teamId: ID): [User!]!
  usersAt(location: LocationInput!): [User!]!
  "Five arguments that name User fields: more than svc-cache narrows by, so none does."
  usersWhere(id: ID, name: String, role: Role, teamId: ID, location: LocationInput): [User!]!
  user(id: ID!): User
  settingsByRole(role: Role!): [Setting!]!
}

type Mutation {
  addUser(name: String!, role: Role!, teamId: ID, location: LocationInput): User!
  "A list no stored answer holds: it names no lists. Not served."
  importUsers(role: Role): [User!]!
  setRole(name: String!, role: Role!): Setting
}
`;

interface UserRecord {
  id: string;
  name: string;
  role: 'admin' | 'guest';
  teamId: string | null;
  location: { city: string; country: string } | null;
}

interface SettingRecord {
  name: string;
  role: 'admin' | 'guest';
}

function seedSettings(): SettingRecord[] {
  return [
    { name: 'theme', role: 'guest' },
    { name: 'billing', role: 'admin' },
  ];
}

function seed(): UserRecord[] {
  return [
    { id: 'u1', name: 'Ada', role: 'admin', teamId: 't1', location: { city: 'Paris', country: 'FR' } },
    { id: 'u2', name: 'Bea', role: 'guest', teamId: 't2', location: { city: 'Berlin', country: 'DE' } },
  ];
}

const schema = buildSchema(LIST_SCHEMA_SDL);

export async function startListOrigin(): Promise<DemoOrigin> {
  let users = seed();
  let settings = seedSettings();
  const requests: RecordedRequest[] = [];
  const sameLocation = (user: UserRecord, location: UserRecord['location']): boolean =>
    user.location?.city === location?.city && user.location?.country === location?.country;
  const page = (list: UserRecord[], args: { first?: number | null; after?: string | null }): UserRecord[] => {
    const start = args.after == null ? 0 : list.findIndex((user) => user.id === args.after) + 1;
    return list.slice(start, args.first == null ? undefined : start + args.first);
  };
  const rootValue = {
    users: (args: { first?: number; after?: string }) => page(users, args),
    usersByRole: (args: { role: string; first?: number; after?: string }) => page(users.filter((user) => user.role === args.role), args),
    usersByTeam: ({ team }: { team: string }) => users.filter((user) => user.teamId === team),
    usersByRoleAndTeam: ({ role, teamId }: { role?: string | null; teamId?: string | null }) =>
      users.filter((user) => (role == null || user.role === role) && (teamId == null || user.teamId === teamId)),
    usersAt: ({ location }: { location: UserRecord['location'] }) => users.filter((user) => sameLocation(user, location)),
    usersWhere: ({ role }: { role?: string | null }) => users.filter((user) => role == null || user.role === role),
    user: ({ id }: { id: string }) => users.find((user) => user.id === id) ?? null,
    settingsByRole: ({ role }: { role: string }) => settings.filter((setting) => setting.role === role),
    setRole: ({ name, role }: SettingRecord) => {
      const setting = settings.find((found) => found.name === name);
      if (setting) setting.role = role;
      return setting ?? null;
    },
    addUser: (args: Pick<UserRecord, 'name' | 'role'> & Partial<UserRecord>) => {
      const user: UserRecord = { id: `u${users.length + 1}`, name: args.name, role: args.role, teamId: args.teamId ?? null, location: args.location ?? null };
      users.push(user);
      return user;
    },
  };

  const server = createServer((req, res) => {
    void readBody(req).then(async (body) => {
      requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: flatten(req), body });
      const params = JSON.parse(body) as { query: string; variables?: Record<string, unknown>; operationName?: string };
      const result = await graphql({ schema, source: params.query, rootValue, variableValues: params.variables ?? null, operationName: params.operationName ?? null });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    port,
    requests,
    requestCount: () => requests.length,
    reset: () => {
      users = seed();
      settings = seedSettings();
      requests.length = 0;
    },
    setBehaviour: () => {
      throw new Error('the list origin has no behaviours to set');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function flatten(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]));
}
