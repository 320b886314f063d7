/**
 * `text` when it has at most `maxCharacters` UTF-16 code units; otherwise its first ones and a mark
 * of how many were cut, `…[+N]`. What a client chooses (operation names, purge tags) is kept and
 * shown by the dashboard and logged; a name of 99 KB must be neither (README, Dashboard). A GraphQL
 * name cannot hold `…`, so the mark never reads as part of one. A cut never splits a surrogate pair.
 */
export function shortened(text: string, maxCharacters: number): string {
  if (text.length <= maxCharacters) return text;
  const keep = isHighSurrogate(text.charCodeAt(maxCharacters - 1)) ? maxCharacters - 1 : maxCharacters;
  return `${text.slice(0, keep)}…[+${text.length - keep}]`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
