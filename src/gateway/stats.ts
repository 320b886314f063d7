/** Envoy's `http.<stat_prefix>.ext_proc.*` counters (docs/ext-proc.md, Timeouts and failure modes), same names. */
export interface ExtProcCounters {
  streams_started: number;
  stream_msgs_sent: number;
  stream_msgs_received: number;
  spurious_msgs_received: number;
  streams_closed: number;
  streams_failed: number;
  failure_mode_allowed: number;
  message_timeouts: number;
  rejected_header_mutations: number;
  override_message_timeout_received: number;
  override_message_timeout_ignored: number;
  clear_route_cache_ignored: number;
}

export interface ProcessorMessageRecord {
  direction: 'sent' | 'received';
  /** The oneof case (`request_headers`, `immediate_response`, …), `override_message_timeout`, or `empty`. */
  type: string;
}

/** What an access log line would say about one HTTP request, plus its ext_proc conversation. */
export interface RequestRecord {
  /** The x-request-id the request carried upstream and to the processor. */
  requestId: string;
  method: string;
  path: string;
  /** %RESPONSE_CODE%: 0 when the client got no response (reset). */
  responseCode: number;
  /** %RESPONSE_CODE_DETAILS%, e.g. `via_upstream`, `request_payload_too_large`. */
  responseCodeDetails: string;
  processorMessages: ProcessorMessageRecord[];
}

export interface GatewayStats {
  readonly counters: ExtProcCounters;
  /** Finished requests, oldest first; at most the last 10 000. */
  readonly requests: readonly RequestRecord[];
  lastRequest(): RequestRecord | undefined;
  requestById(requestId: string): RequestRecord | undefined;
}

const KEPT_REQUEST_RECORDS = 10_000;

export class GatewayStatsCollector implements GatewayStats {
  readonly counters: ExtProcCounters = {
    streams_started: 0,
    stream_msgs_sent: 0,
    stream_msgs_received: 0,
    spurious_msgs_received: 0,
    streams_closed: 0,
    streams_failed: 0,
    failure_mode_allowed: 0,
    message_timeouts: 0,
    rejected_header_mutations: 0,
    override_message_timeout_received: 0,
    override_message_timeout_ignored: 0,
    clear_route_cache_ignored: 0,
  };
  readonly requests: RequestRecord[] = [];

  increment(counter: keyof ExtProcCounters): void {
    this.counters[counter]++;
  }

  record(request: RequestRecord): void {
    this.requests.push(request);
    if (this.requests.length > KEPT_REQUEST_RECORDS) this.requests.shift();
  }

  lastRequest(): RequestRecord | undefined {
    return this.requests.at(-1);
  }

  requestById(requestId: string): RequestRecord | undefined {
    return this.requests.findLast((request) => request.requestId === requestId);
  }
}
