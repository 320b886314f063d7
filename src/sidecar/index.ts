/** The folder's one door: what other folders of src/ may use. */
export { startSidecar } from './sidecar.js';
export { stopPretenuring } from './garbageCollection.js';
