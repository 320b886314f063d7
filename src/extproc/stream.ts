import type { HeaderList } from '../http/headers.js';
import type { Logger } from '../observability/log.js';
import {
  DecisionEngine,
  type CacheStatus,
  type HeaderChanges,
  type RequestDecision,
  type RequestHead,
  type ResponsePlan,
} from '../engine/engine.js';
import type { HttpResponse } from '../http/responses.js';
import {
  BodySendMode,
  type CommonResponse,
  type HeaderMap,
  type HeaderValueOption,
  type ProcessingRequest,
  type ProcessingResponse,
} from './messages.js';

/**
 * One ext_proc stream, i.e. one HTTP request: translates Envoy's messages, which arrive in the order
 * request headers, buffered request body, response headers, buffered response body (ext_proc.md
 * section 2.3), into decision-engine calls, and the engine's answers into exactly one
 * ProcessingResponse of the matching type per message.
 */
export class ProcessingStream {
  private phase: Phase = 'start';
  private head: RequestHead | undefined;
  private plan: ResponsePlan | undefined;
  private responseHeaders: HeaderList = [];
  private decidedStatus: CacheStatus | 'ERROR' | undefined;
  private bytesServedFromCache = 0;
  private forwardedAt: number | undefined;
  private originLatencyMs: number | undefined;

  constructor(
    private readonly engine: DecisionEngine,
    private readonly logger: Logger,
  ) {}

  /** What became of the request so far: HIT, MISS, PASS, an error svc-cache answered, or undecided. */
  get outcome(): StreamOutcome {
    return {
      status: this.decidedStatus,
      bytesServedFromCache: this.bytesServedFromCache,
      head: this.head,
      passReason: this.plan?.kind === 'pass' ? this.plan.reason : this.plan?.kind === 'mutation' ? 'mutation' : undefined,
      originLatencyMs: this.originLatencyMs,
    };
  }

  /**
   * True once Envoy will send nothing more that needs an answer: after an immediate response, the
   * response body's answer, or a response whose body was left to stream past. Ending the call then
   * is a clean close, which Envoy treats as "continue without the processor" (so even an Envoy
   * without allow_mode_override, which would still send that body, just passes it on).
   */
  get complete(): boolean {
    return this.phase === 'done';
  }

  /** The stream ended: whatever the engine still holds for this request is let go. */
  close(): void {
    this.engine.abandon(this.plan);
  }

  /** The answer to one message; throws `ProtocolViolation` for a message Envoy would never send here. */
  async handle(message: ProcessingRequest): Promise<ProcessingResponse> {
    switch (message.request) {
      case 'request_headers':
        return this.onRequestHeaders(message);
      case 'request_body':
        return this.onRequestBody(message);
      case 'request_trailers':
        this.expect(['awaiting-request-body', 'awaiting-response-headers'], 'request_trailers');
        return { request_trailers: {} };
      case 'response_headers':
        return this.onResponseHeaders(message);
      case 'response_body':
        return this.onResponseBody(message);
      case 'response_trailers':
        this.expect(['awaiting-response-body'], 'response_trailers');
        return { response_trailers: {} };
      default:
        throw new ProtocolViolation('ProcessingRequest carries none of the request cases');
    }
  }

  private async onRequestHeaders(message: ProcessingRequest): Promise<ProcessingResponse> {
    this.expect(['start'], 'request_headers');
    const headers = headerList(message.request_headers?.headers);
    const method = firstValue(headers, ':method');
    const path = firstValue(headers, ':path');
    if (method === undefined || path === undefined) {
      throw new ProtocolViolation('request_headers without :method or :path');
    }
    this.head = { method, path, headers, hasBody: message.request_headers?.end_of_stream !== true };
    const decision = await this.decideSafely(() => this.engine.decideRequestHead(this.head!));
    if (decision.kind === 'need-body') {
      this.phase = 'awaiting-request-body';
      return { request_headers: { response: {} } };
    }
    if (decision.kind === 'respond') return this.respondImmediately(decision.response, decision.status);
    this.plan = decision.plan;
    this.phase = 'awaiting-response-headers';
    this.forwardedAt = performance.now();
    const answer: ProcessingResponse = { request_headers: { response: commonResponse(decision.requestHeaders) } };
    // A request passed through needs neither body looked at; the response headers still get
    // `svc-cache: PASS`. Body modes in an override are literal (ext_proc.md section 5.1).
    if (decision.plan.kind === 'pass') answer.mode_override = { request_body_mode: BodySendMode.NONE, response_body_mode: BodySendMode.NONE };
    return answer;
  }

  private async onRequestBody(message: ProcessingRequest): Promise<ProcessingResponse> {
    if (this.phase === 'awaiting-response-headers' && this.plan?.kind === 'pass') {
      // Envoy without allow_mode_override still sends the body: it is not needed.
      return { request_body: { response: {} } };
    }
    this.expect(['awaiting-request-body'], 'request_body');
    const body = message.request_body?.body ?? Buffer.alloc(0);
    const decision = await this.decideSafely(() => this.engine.decideRequest(this.head!, body));
    if (decision.kind === 'respond') return this.respondImmediately(decision.response, decision.status);
    this.plan = decision.plan;
    this.phase = 'awaiting-response-headers';
    this.forwardedAt = performance.now();
    return { request_body: { response: commonResponse(decision.requestHeaders, decision.requestBody) } };
  }

  private onResponseHeaders(message: ProcessingRequest): ProcessingResponse {
    if (this.phase === 'start' || this.phase === 'awaiting-request-body') {
      // An Envoy local reply made before the request phase reached us, or instead of the body it
      // was buffering (413 over its buffer limit): ext_proc.md sections 2.3 E and 6.
      this.plan = DecisionEngine.passPlan('Envoy local reply');
    } else {
      this.expect(['awaiting-response-headers'], 'response_headers');
    }
    if (this.forwardedAt !== undefined) this.originLatencyMs = performance.now() - this.forwardedAt;
    const headers = headerList(message.response_headers?.headers);
    const endOfStream = message.response_headers?.end_of_stream === true;
    const status = Number(firstValue(headers, ':status'));
    const plan = this.plan ?? DecisionEngine.passPlan('no request decision');
    let decision;
    try {
      decision = this.engine.decideResponseHead(plan, status, headers, endOfStream);
    } catch (error) {
      this.logger.error({ err: String(error) }, 'decision engine failed on response headers; passing through');
      decision = { headers: { set: [], remove: [] }, wantsBody: false, plan: DecisionEngine.passPlan('engine error') };
    }
    this.plan = decision.plan;
    this.responseHeaders = headers;
    if (!decision.wantsBody) this.decidedStatus = 'PASS';
    this.phase = decision.wantsBody && !endOfStream ? 'awaiting-response-body' : 'done';
    const answer: ProcessingResponse = { response_headers: { response: commonResponse(decision.headers) } };
    if (!endOfStream && !decision.wantsBody) answer.mode_override = { response_body_mode: BodySendMode.NONE };
    return answer;
  }

  private async onResponseBody(message: ProcessingRequest): Promise<ProcessingResponse> {
    this.expect(['awaiting-response-body'], 'response_body');
    this.phase = 'done';
    const body = message.response_body?.body ?? Buffer.alloc(0);
    try {
      const decision = await this.engine.decideResponseBody(this.plan!, this.responseHeaders, body);
      this.decidedStatus = decision.status;
      return { response_body: { response: commonResponse(decision.headers, decision.body) } };
    } catch (error) {
      this.logger.error({ err: String(error) }, 'decision engine failed on the response body; passing through');
      this.decidedStatus = 'PASS';
      return { response_body: { response: {} } };
    }
  }

  private respondImmediately(response: HttpResponse, status: CacheStatus | 'ERROR'): ProcessingResponse {
    this.phase = 'done';
    this.decidedStatus = status;
    if (status === 'HIT') this.bytesServedFromCache = response.body.length;
    return {
      immediate_response: {
        status: { code: response.status },
        headers: { set_headers: headerOptions(response.headers) },
        body: response.body,
      },
    };
  }

  /** An engine fault must not fail the client's request: the request goes on to the origin. */
  private async decideSafely<T extends RequestDecision | { kind: 'need-body' }>(
    decide: () => Promise<T>,
  ): Promise<T | RequestDecision> {
    try {
      return await decide();
    } catch (error) {
      this.logger.error({ err: String(error) }, 'decision engine failed on the request; passing through');
      return this.engine.passAfterFault(this.head!);
    }
  }

  private expect(phases: readonly Phase[], received: string): void {
    if (!phases.includes(this.phase)) {
      throw new ProtocolViolation(`unexpected ${received} while ${this.phase}`);
    }
  }
}

export interface StreamOutcome {
  status: CacheStatus | 'ERROR' | undefined;
  bytesServedFromCache: number;
  head: RequestHead | undefined;
  passReason: string | undefined;
  /** Forwarded requests: forward -> response headers. */
  originLatencyMs: number | undefined;
}

/** A message out of Envoy's order or malformed: the stream ends with a gRPC error status. */
export class ProtocolViolation extends Error {}

type Phase =
  | 'start'
  | 'awaiting-request-body'
  | 'awaiting-response-headers'
  | 'awaiting-response-body'
  | 'done';

/**
 * Header values are octets; latin1 keeps every byte as one character and back. Current Envoy sends
 * `raw_value`, Envoy before 1.27 `value` (ext_proc.md section 1.3).
 */
function headerList(map: HeaderMap | undefined): HeaderList {
  return (map?.headers ?? []).map((header) => [
    (header.key ?? '').toLowerCase(),
    header.raw_value && header.raw_value.length > 0 ? header.raw_value.toString('latin1') : (header.value ?? ''),
  ]);
}

function firstValue(headers: HeaderList, name: string): string | undefined {
  return headers.find(([key]) => key === name)?.[1];
}

/**
 * Header changes, and a replacement body when given. Envoy >= 1.29 in BUFFERED mode compares the
 * body it is handed with `content-length` and answers 500 on a mismatch, so a replaced body always
 * carries its own length in the same answer (ext_proc.md section 4.3).
 */
function commonResponse(changes: HeaderChanges, body?: Buffer): CommonResponse {
  const set = body === undefined ? changes.set : [...changes.set, ['content-length', String(body.length)] as const];
  const response: CommonResponse = {};
  if (set.length > 0 || changes.remove.length > 0) {
    response.header_mutation = { set_headers: headerOptions(set), remove_headers: changes.remove };
  }
  if (body !== undefined) response.body_mutation = { body };
  return response;
}

/**
 * Values go in `raw_value` only (setting `value` too makes Envoy answer 500). Envoy's ext_proc reads
 * the deprecated `append` and ignores `append_action`; absent means overwrite, so a repeated name
 * sets its first value and appends the rest (ext_proc.md section 1.3).
 */
function headerOptions(headers: ReadonlyArray<readonly [string, string]>): HeaderValueOption[] {
  const seen = new Set<string>();
  return headers.map(([key, value]) => {
    const option: HeaderValueOption = { header: { key, raw_value: Buffer.from(value, 'latin1') } };
    if (seen.has(key)) option.append = { value: true };
    seen.add(key);
    return option;
  });
}
