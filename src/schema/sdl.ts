import { readFile } from 'node:fs/promises';
import { buildASTSchema, parse, validateSchema, type DocumentNode, type GraphQLSchema } from 'graphql';
import { validateSDL } from 'graphql/validation/validate.js';
import { SchemaLoadError } from './error.js';

/** The schema in an SDL file. Every mistake in the file is reported with its line and column. */
export async function loadSchemaFile(file: string): Promise<GraphQLSchema> {
  let sdl: string;
  try {
    sdl = await readFile(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new SchemaLoadError(`schema file ${file}: cannot read it: ${reason}`);
  }
  return buildSchemaFromSdl(sdl, file);
}

export function buildSchemaFromSdl(sdl: string, file: string): GraphQLSchema {
  let document: DocumentNode;
  try {
    document = parse(sdl);
  } catch (error) {
    throw new SchemaLoadError(describeErrors(file, [error as Error]));
  }
  const sdlErrors = validateSDL(document);
  if (sdlErrors.length > 0) throw new SchemaLoadError(describeErrors(file, sdlErrors));
  const schema = buildASTSchema(document, { assumeValidSDL: true });
  const schemaErrors = validateSchema(schema);
  if (schemaErrors.length > 0) throw new SchemaLoadError(describeErrors(file, schemaErrors));
  return schema;
}

function describeErrors(file: string, errors: readonly Error[]): string {
  return errors
    .map((error) => {
      const locations = (error as { locations?: readonly { line: number; column: number }[] }).locations ?? [];
      const where = locations.map((location) => `line ${location.line}, column ${location.column}`).join(' and ');
      return `schema file ${file}: ${where ? `${where}: ` : ''}${error.message}`;
    })
    .join('; ');
}
