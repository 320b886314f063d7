import { buildASTSchema, parse, validateSchema, type DocumentNode, type GraphQLSchema } from 'graphql';
import { validateSDL } from 'graphql/validation/validate.js';

/**
 * The schema an SDL text describes, or every mistake in it, each with its line and column
 * (`line 2, column 1: Syntax Error: …`): what `schema.file` must hold for `check`, `serve` and a
 * reload alike (README, Every key).
 */
export function schemaFromSdl(sdl: string): { schema: GraphQLSchema } | { problems: string[] } {
  let document: DocumentNode;
  try {
    document = parse(sdl);
  } catch (error) {
    return { problems: describeErrors([error as Error]) };
  }
  const sdlErrors = validateSDL(document);
  if (sdlErrors.length > 0) return { problems: describeErrors(sdlErrors) };
  const schema = buildASTSchema(document, { assumeValidSDL: true });
  const schemaErrors = validateSchema(schema);
  return schemaErrors.length > 0 ? { problems: describeErrors(schemaErrors) } : { schema };
}

function describeErrors(errors: readonly Error[]): string[] {
  return errors.map((error) => {
    const locations = (error as { locations?: readonly { line: number; column: number }[] }).locations ?? [];
    const where = locations.map((location) => `line ${location.line}, column ${location.column}`).join(' and ');
    return `${where ? `${where}: ` : ''}${error.message}`;
  });
}
