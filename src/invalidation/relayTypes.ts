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

/** An edge: named `…Edge`, or holding `node` and `cursor`. */
export function isRelayEdge(type: GraphQLObjectType): boolean {
  const fields = type.getFields();
  return type.name.endsWith('Edge') || (Object.hasOwn(fields, 'node') && Object.hasOwn(fields, 'cursor'));
}
