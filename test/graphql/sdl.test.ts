import { describe, expect, it } from 'vitest';
import { schemaFromSdl } from '../../src/graphql/sdl.js';

describe('schemaFromSdl', () => {
  it('builds the text the configuration checked once: the schema source gets the same schema, not a second build', () => {
    const sdl = 'type Query { a: Int }\n';
    const first = schemaFromSdl(sdl);
    expect('schema' in first).toBe(true);
    expect(schemaFromSdl(`${sdl}`)).toBe(first);
    expect(schemaFromSdl('type Query { b: Int }\n')).not.toBe(first);
    expect(schemaFromSdl('type Query { broken\n')).toEqual({ problems: ['line 2, column 1: Syntax Error: Expected ":", found <EOF>.'] });
  });
});
