/** The folder's one door: what other folders of src/ may use. */
export { DecisionEngine, type EngineEvents, type Exchange, type HeaderChanges, type RequestDecision, type RequestHead, type RequestSummary, type RuntimeState } from './engine.js';
export { storedDocumentWarnings } from './storedDocumentWarnings.js';
