import { HeaderMap } from './headerMap.js';

/** A response Envoy generates itself (sendLocalReply). */
export interface LocalReply {
  status: number;
  body: Buffer;
  /** %RESPONSE_CODE_DETAILS%; whitespace already replaced by `_`. */
  details: string;
  /** Header changes a filter asks for (immediate_response headers), applied before the body rules. */
  mutateHeaders?: (headers: HeaderMap) => void;
}

export interface PreparedLocalReply {
  headers: HeaderMap;
  body: Buffer;
}

/**
 * Envoy's prepareLocalReply (docs/ext-proc.md, Immediate responses): `:status`, the filter's header changes, then a
 * non-empty body forces content-length and adds `content-type: text/plain` unless one was set, while an
 * empty body (or a HEAD request) removes both.
 */
export function prepareLocalReply(reply: LocalReply, isHeadRequest: boolean): PreparedLocalReply {
  const headers = new HeaderMap([[':status', String(reply.status)]]);
  reply.mutateHeaders?.(headers);
  if (reply.body.length > 0 && !isHeadRequest) {
    headers.set('content-length', String(reply.body.length));
    if (!headers.has('content-type')) headers.set('content-type', 'text/plain');
    return { headers, body: reply.body };
  }
  headers.remove('content-length');
  headers.remove('content-type');
  return { headers, body: Buffer.alloc(0) };
}

/** Envoy replaces whitespace in details with `_` (StringUtil::replaceAllEmptySpace). */
export function responseCodeDetails(text: string): string {
  return text.replace(/\s/g, '_');
}

/** Local replies of Envoy's filter manager and router, with their bodies and details. */
export const envoyReplies = {
  /** A BUFFERED request body over the buffer limit (filter manager requestDataTooLarge). */
  requestPayloadTooLarge: (): LocalReply => ({
    status: 413,
    body: Buffer.from('Payload Too Large'),
    details: 'request_payload_too_large',
  }),
  /** A held response body over the buffer limit (filter manager responseDataTooLarge). */
  responsePayloadTooLarge: (): LocalReply => ({
    status: 500,
    body: Buffer.from('Internal Server Error'),
    details: 'response_payload_too_large',
  }),
  /** The route timeout passed before the origin's response headers (router onResponseTimeout). */
  upstreamRequestTimeout: (): LocalReply => ({
    status: 504,
    body: Buffer.from('upstream request timeout'),
    details: 'upstream_response_timeout',
  }),
  /** No origin address could be resolved (a STRICT_DNS cluster with no hosts). */
  noHealthyUpstream: (): LocalReply => ({
    status: 503,
    body: Buffer.from('no healthy upstream'),
    details: 'no_healthy_upstream',
  }),
  /** The origin connection failed or was reset before response headers (router onUpstreamReset). */
  upstreamResetBeforeResponse: (resetReason: string, transportFailure?: string): LocalReply => ({
    status: 503,
    body: Buffer.from(
      `upstream connect error or disconnect/reset before headers. reset reason: ${resetReason}` +
        (transportFailure ? `, transport failure reason: ${transportFailure}` : ''),
    ),
    details: responseCodeDetails(
      `upstream_reset_before_response_started{${resetReason}${transportFailure ? `|${transportFailure}` : ''}}`,
    ),
  }),
};
