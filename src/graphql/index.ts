/** The folder's one door: what other folders of src/ may use. */
export { canonicalJson } from './canonicalJson.js';
export { readJson } from './canonicalVariables.js';
export { parseDocument, selectOperation, type ParsedDocument } from './document.js';
export { FragmentMemo, collectFields, fragmentsOf } from './fragments.js';
export { batchForOrigin, hasUrlParameter, rewrittenForOrigin, type GraphQLParams, type OriginChanges } from './httpRequest.js';
export { operationsViolation, operationViolation, queryTextViolation, selectionNestingLimit, type LimitViolation } from './limits.js';
export {
  ambiguousRequestResponse,
  possibleOperations,
  readGetRequest,
  readPostRequest,
  type GraphQLOperation,
  type PossibleOperation,
  type RequestParameters,
} from './requestParameters.js';
export { schemaFromSdl } from './sdl.js';
export { selectionOf, type Selection } from './selection.js';
export { validationErrors } from './validation.js';
export { variablesKeyText } from './variableOrder.js';
