/** The folder's one door: what other folders of src/ may use. */
export { startSidecar } from './sidecar.js';
export { SIDECAR_NODE_FLAGS, stopPretenuring } from './garbageCollection.js';
