import { GraphQLError, validate, type DocumentNode, type GraphQLSchema } from 'graphql';

/**
 * graphql's `validate`, with running out of call stack as one more validation error. Its
 * NoFragmentCycles rule recurses once per spread, so a chain of some thousands of spreads, within
 * every limit, overflows it (README, Bad input): such a document is one that does not validate
 * here, and an origin built on graphql-js answers it for itself. Any other failure is thrown.
 */
export function validationErrors(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] {
  try {
    return validate(schema, document);
  } catch (error) {
    if (!(error instanceof RangeError && /call stack/i.test(error.message))) throw error;
    return [new GraphQLError(TOO_DEEP_TO_VALIDATE)];
  }
}

export const TOO_DEEP_TO_VALIDATE = 'The document spreads its fragments too deeply to validate';
