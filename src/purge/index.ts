export {
  handlePurgeRequest,
  purgeMode,
  type PurgeDependencies,
  type PurgeEvent,
  type PurgeRequest,
  type PurgeSummary,
} from './handler.js';
export {
  buildPurgeSchema,
  derivePurgeApi,
  type OmittedPurgeField,
  type PurgeApi,
  warnOmittedPurgeFields,
} from './schema.js';
export { isPurgeToken } from './token.js';
export { carriesPurgeToken, hasValidPurgeToken, looksLikePurge, purgeTokenHeader } from './detection.js';
export { withoutEmptyPurgeParentheses } from './emptyParentheses.js';
