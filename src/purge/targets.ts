/**
 * What one purge request asks to invalidate. The purge schema's resolvers only add to it; the
 * request handler applies it to the store in one call once every field has run, so several purge
 * fields in one mutation cost one round trip and are confirmed together.
 */
export class PurgeTargets {
  /** The purge fields that ran, in order, by field name (not alias). */
  readonly fields: string[] = [];
  readonly tags = new Set<string>();
  /** `_purgeAll` ran: every entry goes, whatever the tags. */
  everything = false;

  addTags(field: string, tags: Iterable<string>): void {
    this.fields.push(field);
    for (const tag of tags) this.tags.add(tag);
  }

  addEverything(field: string): void {
    this.fields.push(field);
    this.everything = true;
  }
}
