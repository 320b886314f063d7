import { ownedCopy, shortened } from '../util/index.js';

/** Characters of a name (operation, purge field, tag) the dashboard keeps and shows (README, Dashboard). */
export const SHOWN_NAME_CHARACTERS = 100;

/**
 * A name as the dashboard keeps it. Clients choose operation names and what a purge names, and the
 * page fetches its lists every 3 s: 100 operations named with 99 KB each made one answer 9.4 MB.
 * A copy of its own: cut from the query text, a kept name would keep the whole text (ownedCopy.ts).
 */
export function shownName(name: string): string {
  return ownedCopy(shortened(name, SHOWN_NAME_CHARACTERS));
}
