import { buildSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { configSchemaMismatches } from '../../src/schema/check.js';
import { LIST_SCHEMA_SDL } from '../support/listOrigin.js';
import { testConfig } from '../support/stack.js';

describe('configSchemaMismatches: listArguments.fields', () => {
  it('warns of a mapping that names what the schema lacks, or that could never narrow', () => {
    const schema = buildSchema(`${LIST_SCHEMA_SDL}\ntype Team { id: ID! }\n`);
    const fields = {
      'Query.usersByTeam.team': 'User.teamId',
      'Quer.usersByTeam.team': 'User.teamId',
      'Query.user.id': 'User.id',
      'Query.usersByTeam.squad': 'User.teamId',
      'Query.usersByRole.role': 'Team.id',
      'Query.users.first': 'User.rank',
      'Query.usersAt.location': 'User.name',
      'Query.usersByRole.first': null,
      'Query.users.last': null,
    };
    expect(configSchemaMismatches(testConfig('http://origin.test/graphql', { listArguments: { fields } }), schema)).toEqual([
      'listArguments.fields.Quer.usersByTeam.team: the origin schema has no object type Quer',
      'listArguments.fields.Query.user.id: type Query has no list field user',
      'listArguments.fields.Query.usersByTeam.squad: field Query.usersByTeam has no argument squad',
      'listArguments.fields.Query.usersByRole.role: Query.usersByRole cannot hold objects of type Team',
      'listArguments.fields.Query.users.first: type User has no field rank',
      'listArguments.fields.Query.usersAt.location: argument location can never equal User.name (their types differ), so it narrows nothing',
      'listArguments.fields.Query.users.last: field Query.users has no argument last',
    ]);
  });
});

describe('configSchemaMismatches: rules', () => {
  // A new user's run: the README's own `{ Node: [email] }` (the field on the types implementing
  // Node, not yet on Node) was logged at error, counted as a mismatch and failed `check`.
  it('takes a field an interface lacks but a type implementing it has as a match', () => {
    const schema = buildSchema(`
      interface Node { id: ID! }
      type User implements Node { id: ID! email: String }
      type Query { node(id: ID!): Node }
    `);
    const rules = [{ types: { Node: ['email', 'nickname'] }, maxAge: 60 }];
    expect(configSchemaMismatches(testConfig('http://origin.test/graphql', { rules }), schema)).toEqual(['rules[0].types.Node: type Node has no field nickname']);
  });
});
