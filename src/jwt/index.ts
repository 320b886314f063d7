/** The folder's one door: what other folders of src/ may use. */
export { MAX_VERIFIED_MS, TokenVerifier, type JwtFailure, type Verification } from './verifier.js';
export type { KeySetOptions } from './keys.js';
