/** Why the origin schema could not be loaded, in words an operator can act on. */
export class SchemaLoadError extends Error {
  override readonly name = 'SchemaLoadError';
}
