/**
 * A copy of `text` that shares no memory with the string it came from.
 *
 * V8 represents a substring of 13 characters or more as a slice of its parent, and a concatenation
 * as a pair of its parts, each keeping the whole parent alive. graphql-js's lexer cuts every name
 * out of the query text that way, so an operation name or a tag built from one keeps the client's
 * whole query text (up to `limits.maxQueryBytes`) for as long as the name is kept: measured with the
 * in-memory store, 3,000 named queries of 100 KB each held 368 MB of heap while the store counted a
 * few dozen bytes per tag. Whatever is kept past its request (tags in a store or an index, names on
 * the dashboard) is copied through this first. `JSON.parse` always builds a string of its own, and
 * the JSON round trip keeps every code unit, lone surrogates included.
 */
export function ownedCopy(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}
