import { buildASTSchema, parse, validateSchema, type DocumentNode, type GraphQLSchema } from 'graphql';
import { validateSDL } from 'graphql/validation/validate.js';

/**
 * The schema an SDL text describes, or every mistake in it, each with its line and column
 * (`line 2, column 1: Syntax Error: …`): what `schema.file` must hold for `check`, `serve` and a
 * reload alike (README, Every key). The last text's answer is remembered: loading a configuration
 * checks its `schema.file` (every 10 s while the file is watched) and the schema source then builds
 * the same text to use it, and building a large schema takes a good part of a second.
 */
export function schemaFromSdl(sdl: string): SdlReading {
  if (lastReading?.sdl !== sdl) lastReading = { sdl, reading: readSdl(sdl) };
  return lastReading.reading;
}

type SdlReading = { schema: GraphQLSchema } | { problems: string[] };

let lastReading: { sdl: string; reading: SdlReading } | undefined;

function readSdl(sdl: string): SdlReading {
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
