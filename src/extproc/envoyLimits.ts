/**
 * Limits Envoy puts on what ext_proc may do to a request, as plain constants so the decision engine
 * can respect them without depending on the gRPC side (docs/ext-proc.md, Header mutations).
 */

/**
 * Envoy answers 500 when a header mutation leaves the request headers over its limit (60 KiB by
 * default), whatever failure_mode_allow says; a rewritten `:path` stays far under it, with room for
 * the other headers.
 */
export const MAX_REWRITTEN_PATH_BYTES = 16 * 1024;
