import { readFile } from 'node:fs/promises';
import type { GraphQLSchema } from 'graphql';
import { schemaFromSdl } from '../graphql/index.js';
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

function buildSchemaFromSdl(sdl: string, file: string): GraphQLSchema {
  const built = schemaFromSdl(sdl);
  if ('problems' in built) throw new SchemaLoadError(built.problems.map((problem) => `schema file ${file}: ${problem}`).join('; '));
  return built.schema;
}
