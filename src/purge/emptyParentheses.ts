import { Lexer, Source, TokenKind, type Token } from 'graphql';

/**
 * SPEC-style purges as Stellate's docs write them, `mutation { _purgeTodo() }`, are a syntax error
 * in GraphQL, whose grammar has no empty argument list. This gives the query with the empty
 * parentheses after purge-named fields (`_purge…`, `purge…`, not a directive's) blanked out, the
 * text otherwise unchanged and of the same length, or undefined when there are none or the text
 * does not lex. One pass of graphql-js's own lexer, so comments and strings are read as GraphQL
 * reads them (a `()` inside a string is never touched) and the work is linear in the query.
 *
 * The caller parses the result only for a request with a valid purge token whose text did not
 * parse, and answers it only when it is a purge; every other request keeps its syntax error.
 */
export function withoutEmptyPurgeParentheses(query: string): string | undefined {
  const lexer = new Lexer(new Source(query));
  const blanked: number[] = [];
  // The last three tokens before the current one: the token before the name, the name, `(`.
  let window: [Token | undefined, Token | undefined, Token | undefined] = [undefined, undefined, lexer.token];
  try {
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      const [before, name, open] = window;
      if (token.kind === TokenKind.PAREN_R && open?.kind === TokenKind.PAREN_L && isPurgeName(name) && before?.kind !== TokenKind.AT) {
        blanked.push(open.start, token.start);
      }
      window = [window[1], window[2], token];
    }
  } catch {
    return undefined;
  }
  if (blanked.length === 0) return undefined;
  // Token offsets are UTF-16 indexes into the query, in ascending order.
  let rewritten = '';
  let from = 0;
  for (const at of blanked) {
    rewritten += `${query.slice(from, at)} `;
    from = at + 1;
  }
  return rewritten + query.slice(from);
}

function isPurgeName(token: Token | undefined): boolean {
  return token?.kind === TokenKind.NAME && /^_?purge/.test(token.value);
}
