/**
 * The ext_proc messages as @grpc/proto-loader presents them with the options in `protocol.ts`
 * (keepCase, enums and longs as numbers, bytes as Buffer, oneofs named, no defaults filled in),
 * so field presence stays visible: Envoy acts on `has_header_mutation()` and friends.
 */

export interface HeaderValue {
  key?: string;
  /** Pre-1.27 Envoy only; read as a fallback, never written (both set => Envoy answers 500). */
  value?: string;
  raw_value?: Buffer;
}

export interface HeaderMap {
  headers?: HeaderValue[];
}

export interface HeaderValueOption {
  header?: HeaderValue;
  /** google.protobuf.BoolValue; absent means overwrite. `append_action` is ignored by Envoy's ext_proc. */
  append?: { value?: boolean };
  append_action?: number;
  keep_empty_value?: boolean;
}

export interface HeaderMutation {
  set_headers?: HeaderValueOption[];
  remove_headers?: string[];
}

export interface HttpHeaders {
  headers?: HeaderMap;
  end_of_stream?: boolean;
}

export interface HttpBody {
  body?: Buffer;
  end_of_stream?: boolean;
}

export interface HttpTrailers {
  trailers?: HeaderMap;
}

export const BodySendMode = {
  NONE: 0,
  STREAMED: 1,
  BUFFERED: 2,
  BUFFERED_PARTIAL: 3,
  FULL_DUPLEX_STREAMED: 4,
  GRPC: 5,
} as const;

export const HeaderSendMode = { DEFAULT: 0, SEND: 1, SKIP: 2 } as const;

export interface ProcessingMode {
  request_header_mode?: number;
  response_header_mode?: number;
  request_body_mode?: number;
  response_body_mode?: number;
  request_trailer_mode?: number;
  response_trailer_mode?: number;
}

export interface ProtocolConfiguration {
  request_body_mode?: number;
  response_body_mode?: number;
  send_body_without_waiting_for_header_response?: boolean;
}

export type ProcessingRequestCase =
  | 'request_headers'
  | 'response_headers'
  | 'request_body'
  | 'response_body'
  | 'request_trailers'
  | 'response_trailers';

export interface ProcessingRequest {
  request?: ProcessingRequestCase;
  request_headers?: HttpHeaders;
  response_headers?: HttpHeaders;
  request_body?: HttpBody;
  response_body?: HttpBody;
  request_trailers?: HttpTrailers;
  response_trailers?: HttpTrailers;
  metadata_context?: unknown;
  attributes?: Record<string, unknown>;
  observability_mode?: boolean;
  protocol_config?: ProtocolConfiguration;
}

export const ResponseStatus = { CONTINUE: 0, CONTINUE_AND_REPLACE: 1 } as const;

export interface BodyMutation {
  mutation?: 'body' | 'clear_body' | 'streamed_response';
  body?: Buffer;
  clear_body?: boolean;
  streamed_response?: { body?: Buffer; end_of_stream?: boolean };
}

export interface CommonResponse {
  status?: number;
  header_mutation?: HeaderMutation;
  body_mutation?: BodyMutation;
  trailers?: HeaderMap;
  clear_route_cache?: boolean;
}

export interface HeadersResponse {
  response?: CommonResponse;
}

export interface BodyResponse {
  response?: CommonResponse;
}

export interface TrailersResponse {
  header_mutation?: HeaderMutation;
}

export interface ImmediateResponse {
  status?: { code?: number };
  headers?: HeaderMutation;
  body?: Buffer;
  grpc_status?: { status?: number };
  details?: string;
}

export type ProcessingResponseCase =
  | 'request_headers'
  | 'response_headers'
  | 'request_body'
  | 'response_body'
  | 'request_trailers'
  | 'response_trailers'
  | 'immediate_response'
  | 'streamed_immediate_response';

export interface ProcessingResponse {
  response?: ProcessingResponseCase;
  request_headers?: HeadersResponse;
  response_headers?: HeadersResponse;
  request_body?: BodyResponse;
  response_body?: BodyResponse;
  request_trailers?: TrailersResponse;
  response_trailers?: TrailersResponse;
  immediate_response?: ImmediateResponse;
  streamed_immediate_response?: unknown;
  dynamic_metadata?: unknown;
  mode_override?: ProcessingMode;
  override_message_timeout?: { seconds?: number | string; nanos?: number };
  request_drain?: boolean;
}
