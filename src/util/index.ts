/** Small helpers every folder may use; they depend on nothing in svc-cache. */
export { deferred, type Deferred } from './deferred.js';
export { errorMessage } from './errorMessage.js';
export { getOrInsertComputed } from './getOrInsertComputed.js';
export { isPlainObject } from './isPlainObject.js';
export { ownedCopy } from './ownedCopy.js';
export { ListenError, type ListenFailure, type ListeningServer } from './listenError.js';
export { shortened } from './shortened.js';
export { withoutQueryValues } from './withoutQueryValues.js';
