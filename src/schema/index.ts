export { configSchemaMismatches } from './check.js';
export { SchemaLoadError } from './error.js';
export { loadSchemaFile } from './sdl.js';
export { createSchemaSource, type SchemaSource, type SchemaSourceOptions } from './source.js';
