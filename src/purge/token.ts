import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether `presented` is one of the configured purge tokens. Both sides are compared as SHA-256
 * digests, which always have equal length, so neither the tokens' lengths nor the position of a
 * first differing byte shows in the time taken; every token is compared, matched or not.
 */
export function isPurgeToken(presented: string | undefined, tokens: readonly string[]): boolean {
  if (presented === undefined) return false;
  const presentedDigest = sha256(presented);
  let matched = false;
  for (const token of tokens) matched = timingSafeEqual(presentedDigest, sha256(token)) || matched;
  return matched;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
