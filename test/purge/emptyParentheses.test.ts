import { describe, expect, it } from 'vitest';
import { withoutEmptyPurgeParentheses } from '../../src/purge/index.js';

describe('withoutEmptyPurgeParentheses', () => {
  it('blanks the empty parentheses after purge-named fields, keeping the length', () => {
    expect(withoutEmptyPurgeParentheses('mutation { _purgeTodo() }')).toBe('mutation { _purgeTodo   }');
    expect(withoutEmptyPurgeParentheses('mutation{a:purgeUser( ) _purgeAll()}')).toBe('mutation{a:purgeUser    _purgeAll  }');
    expect(withoutEmptyPurgeParentheses('mutation { _purgeTodo(\n# why\n) }')).toBe('mutation { _purgeTodo \n# why\n  }');
  });

  it('leaves strings, comments, directives, other fields and argument lists alone', () => {
    expect(withoutEmptyPurgeParentheses('mutation { _purgeTodo }')).toBeUndefined();
    expect(withoutEmptyPurgeParentheses('mutation { addTodo() { id } }')).toBeUndefined();
    expect(withoutEmptyPurgeParentheses('mutation { _purgeOperationName(names: ["_purgeTodo()"]) }')).toBeUndefined();
    expect(withoutEmptyPurgeParentheses('# _purgeTodo()\nmutation { x }')).toBeUndefined();
    expect(withoutEmptyPurgeParentheses('mutation { x @purgeIt() }')).toBeUndefined();
    expect(withoutEmptyPurgeParentheses('mutation { _purgeTodo() addTodo() }')).toBe('mutation { _purgeTodo   addTodo() }');
  });

  it('gives up on text that does not lex', () => {
    expect(withoutEmptyPurgeParentheses('mutation { _purgeTodo() "unterminated }')).toBeUndefined();
    expect(withoutEmptyPurgeParentheses('mutation { _purgeTodo() ~ }')).toBeUndefined();
  });

  it('keeps UTF-16 offsets right after characters outside the BMP', () => {
    expect(withoutEmptyPurgeParentheses('# 🚀🚀\nmutation { _purgeTodo() }')).toBe('# 🚀🚀\nmutation { _purgeTodo   }');
  });

  it('blanks 300,000 of them in one pass, where work per field would not finish', () => {
    // Not timed (README, Performance: speed is measured in bench/): a pass per field over this
    // 3.9 MB text would be some 10^11 character steps, far past the test's timeout.
    const count = 300_000;
    const blanked = withoutEmptyPurgeParentheses(`mutation { ${'_purgeTodo() '.repeat(count)}}`);
    expect(blanked).toBe(`mutation { ${'_purgeTodo   '.repeat(count)}}`);
  });
});
