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

  it('takes time linear in the text', () => {
    const fields = (count: number) => `mutation { ${'_purgeTodo() '.repeat(count)}}`;
    const time = (text: string) => {
      const started = performance.now();
      withoutEmptyPurgeParentheses(text);
      return performance.now() - started;
    };
    time(fields(5_000));
    const small = time(fields(5_000));
    const large = time(fields(50_000));
    expect(large).toBeLessThan(small * 30);
  });
});
