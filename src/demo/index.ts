/** The folder's one door: what other folders of src/ may use. */
export { startDemoOrigin } from './origin.js';
