import type { GraphQLObjectType } from 'graphql';

/**
 * The shapes of the GraphQL Cursor Connections convention (Relay), by name or by fields, as
 * schemas spell them: what svc-cache treats as a list of the entities its edges hold rather than an
 * object of its own (README, Invalidation after mutations).
 */

/** A connection: named `…Connection`, or holding `edges` and `pageInfo`. */
export function isRelayConnection(type: GraphQLObjectType): boolean {
  const fields = type.getFields();
  return type.name.endsWith('Connection') || (Object.hasOwn(fields, 'edges') && Object.hasOwn(fields, 'pageInfo'));
}

/**
 * An edge or a connection by its fields alone (`node` and `cursor`, `edges` and `pageInfo`), as a
 * payload carries one: a name ending in `Edge` or `Connection` is not enough there, as a type of
 * one's own (`SmtpConnection`) must still be invalidated when a mutation returns it.
 */
export function isRelayPage(type: GraphQLObjectType): boolean {
  const fields = type.getFields();
  return (Object.hasOwn(fields, 'node') && Object.hasOwn(fields, 'cursor')) || (Object.hasOwn(fields, 'edges') && Object.hasOwn(fields, 'pageInfo'));
}
