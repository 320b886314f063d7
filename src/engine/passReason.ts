import type { JwtFailure } from '../jwt/index.js';

/**
 * Why a request went to the origin without being answered from or stored in the cache: a stable
 * code, counted on `/metrics` (`svc_cache_pass_total{reason}`), logged as the `passReason` field
 * and returned in `svc-debug-pass-reason` (docs/graphql-caching.md, Cacheability). The set is
 * closed, so the metric's label stays bounded.
 */
export type PassReason =
  // The request, before any GraphQL is read.
  | 'streaming-request'
  | 'upgrade-request'
  | 'not-an-endpoint'
  | 'batch'
  | 'invalid-utf8'
  | 'method-not-graphql'
  | 'get-with-body'
  | 'uninterpretable-body'
  | 'no-query'
  | 'syntax-error'
  | 'unknown-operation'
  /** An id the manifest does not hold (README, Stored documents sent by id). */
  | 'unknown-document-id'
  /**
   * No text, but members or URL parameters an origin may read a stored document's id from, which
   * svc-cache reads none from: no manifest, two different ids, another name (README, Stored
   * documents sent by id).
   */
  | 'unread-document-id'
  /** A stored document sent by its id is over `limits` (README, Stored documents sent by id). */
  | 'stored-document-over-limits'
  /** A query text beside a stored document's id, which some origins run instead (README, Stored documents sent by id). */
  | 'query-beside-document-id'
  // The operation.
  | 'schema-not-loaded'
  | 'mutation'
  | 'subscription'
  | 'streaming-document'
  | 'introspection'
  /**
   * A selection within a field svc-cache's schema lacks (the origin deployed it first): what it
   * holds has no type svc-cache knows, so no rule on its type can match, and objects in it could
   * not be tagged (README, Fields svc-cache's schema lacks).
   */
  | 'schema-lacks-field'
  | 'not-acceptable'
  /** A GET with `If-Match` or `If-Unmodified-Since` that would be a HIT, which the origin may answer 412 (README, Response headers stored and replayed). */
  | 'precondition'
  | 'purge'
  | 'bypass-header'
  /**
   * A request asking the origin to trace its own run or show its plan (`apollo-federation-include-trace`,
   * `x-apollo-tracing` and others): the origin's answer would carry them (README, HIT, MISS, PASS).
   */
  | 'trace-requested'
  /** The request's `Cache-Control: no-store` (RFC 9111 section 5.2.1.5). */
  | 'request-no-store'
  | 'no-rule'
  | 'max-age-zero'
  | 'credentials-on-public'
  | 'credentials-outside-scope'
  | 'ambiguous-scope-value'
  | 'rewritten-path-too-long'
  /** The request's headers leave no room under Envoy's limits for svc-cache's changes (fittedRequestChanges). */
  | 'request-headers-too-large'
  // A JWT scope's token failed verification: the `jwt-*` codes of src/jwt/verifier.ts (README, Scopes).
  | JwtFailure
  // svc-cache itself, or Envoy.
  | 'store-unavailable'
  | 'engine-error'
  | 'envoy-local-reply'
  | 'no-response-phase'
  // The origin's answer.
  | 'origin-status'
  | 'origin-content-type'
  | 'origin-no-store'
  | 'origin-no-cache'
  | 'origin-pragma-no-cache'
  | 'origin-expired'
  | 'origin-max-age-invalid'
  /** A Cache-Control line outside RFC 9111's grammar, which other caches may read as no-store or private. */
  | 'origin-cache-control-invalid'
  | 'origin-vary-star'
  | 'origin-streaming'
  | 'origin-private'
  | 'origin-set-cookie'
  | 'origin-encoded'
  | 'origin-vary'
  | 'origin-no-body'
  | 'origin-max-age-zero'
  | 'response-too-large'
  /** A HIT of the answer would cross Envoy's header limits, which would drop all its headers. */
  | 'response-headers-too-large'
  | 'response-not-graphql'
  | 'response-has-errors'
  | 'untaggable-response'
  | 'invalidated-meanwhile';
