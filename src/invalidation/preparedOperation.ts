import type { DocumentNode } from 'graphql';
import type { KeyFields } from './keyFields.js';
import type { ListArgumentIndex } from './listArguments.js';

/** One operation made ready for the origin, and what reading its response back needs. */
export interface PreparedOperation {
  /** The operation and its fragments as the origin is to receive them. */
  readonly document: DocumentNode;
  /** `document` printed: the query text to send to the origin when `rewritten`. */
  readonly query: string;
  /** False when nothing needed adding: the client's request and the origin's bytes can go through untouched. */
  readonly rewritten: boolean;
  /** Every response key svc-cache added starts with this; none of the client's does. */
  readonly addedKeyPrefix: string;
  /** The key fields the additions were made for; reading entities back uses the same. */
  readonly keyFields: KeyFields;
  /** How stored answers tag their lists and mutations name them; undefined: only the type-wide list tags. */
  readonly lists: ListArgumentIndex | undefined;
}
