import { buildSchema, Kind, parse, type DocumentNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { validationErrors } from '../../src/graphql/validation.js';
import { demoSchemaSDL } from '../support/origin.js';

const schema = buildSchema(demoSchemaSDL);

describe('validationErrors', () => {
  it("answers graphql's own errors for a document it can validate", () => {
    expect(validationErrors(schema, parse('{ todos { id } }'))).toEqual([]);
    expect(validationErrors(schema, parse('{ todos { nope } }')).map((error) => error.message)).toEqual(['Cannot query field "nope" on type "Todo". Did you mean "done"?']);
  });

  it('answers one error for a chain of 20,000 spreads, where graphql runs out of call stack', () => {
    const chain = Array.from({ length: 20_000 }, (_, i) => `fragment F${i} on Todo { ...F${i + 1} }`).join(' ');
    const errors = validationErrors(schema, parse(`{ todos { ...F0 } } ${chain} fragment F20000 on Todo { id }`));
    expect(errors.map((error) => error.message)).toEqual(['The document spreads its fragments too deeply to validate']);
  });

  it('throws any other failure, so an engine fault is not taken for an invalid document', () => {
    // A document graphql cannot walk: a TypeError, not running out of call stack.
    const broken = { kind: Kind.DOCUMENT, definitions: [null] };
    expect(() => validationErrors(schema, broken as unknown as DocumentNode)).toThrow(TypeError);
  });
});
