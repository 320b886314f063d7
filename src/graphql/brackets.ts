/**
 * How deep `{`, `[` and `(` nest in a GraphQL text, outside strings and comments (GraphQL's lexical
 * grammar), in one pass. graphql-js's parser recurses at each, so this is read before a text is
 * parsed (src/graphql/limits.ts). A text that does not lex is left to the parser to refuse.
 */
export function bracketNesting(text: string): number {
  let [depth, deepest] = [0, 0];
  for (let index = 0; index < text.length; index += 1) {
    switch (text.charCodeAt(index)) {
      case OPEN_BRACE:
      case OPEN_BRACKET:
      case OPEN_PARENTHESIS:
        depth += 1;
        if (depth > deepest) deepest = depth;
        break;
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
      case CLOSE_PARENTHESIS:
        if (depth > 0) depth -= 1;
        break;
      case HASH:
        index = lineEnd(text, index);
        break;
      case QUOTE:
        index = text.startsWith('"""', index) ? blockStringEnd(text, index + 3) : stringEnd(text, index + 1);
        break;
    }
  }
  return deepest;
}

/** The index of the line break that ends a comment, or the text's length. */
function lineEnd(text: string, from: number): number {
  let index = from;
  while (index < text.length && !isLineBreak(text.charCodeAt(index))) index += 1;
  return index;
}

/** The index of the quote closing a string whose first character is at `from`, escapes skipped. */
function stringEnd(text: string, from: number): number {
  let index = from;
  for (let code = text.charCodeAt(index); index < text.length && code !== QUOTE && !isLineBreak(code); code = text.charCodeAt(index)) {
    index += code === BACKSLASH ? 2 : 1;
  }
  return index;
}

/** The index of the last quote closing a block string whose content starts at `from` (`\"""` escapes one). */
function blockStringEnd(text: string, from: number): number {
  let index = from;
  while (index < text.length && !text.startsWith('"""', index)) index += text.startsWith('\\"""', index) ? 4 : 1;
  return Math.min(index + 2, text.length);
}

function isLineBreak(code: number): boolean {
  return code === LINE_FEED || code === CARRIAGE_RETURN;
}

const [OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, OPEN_PARENTHESIS, CLOSE_PARENTHESIS] = [123, 125, 91, 93, 40, 41];
const [HASH, QUOTE, BACKSLASH, LINE_FEED, CARRIAGE_RETURN] = [35, 34, 92, 10, 13];
