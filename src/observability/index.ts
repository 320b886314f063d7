/** The folder's one door: what other folders of src/ may use. */
export { createLogger, silentLogger, withSecretHeaders, type Logger } from './log.js';
export { Metrics, type InvalidationSource, type RequestOutcome, type StoreOperation } from './metrics.js';
export { RepeatedWarning } from './repeatedWarning.js';
