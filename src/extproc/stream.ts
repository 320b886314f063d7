import type { HeaderList } from '../http/index.js';
import type { DecisionEngine, Exchange, HeaderChanges, RequestSummary } from '../engine/index.js';
import type { HttpResponse } from '../http/index.js';
import {
  BodySendMode,
  type CommonResponse,
  type HeaderMap,
  type HeaderValueOption,
  type ProcessingRequest,
  type ProcessingResponse,
} from './messages.js';

/** The engine's four phase calls on an exchange, and how an exchange begins. */
export type PhaseEngine = Pick<DecisionEngine, 'begin' | 'requestHead' | 'requestBody' | 'responseHead' | 'responseBody'>;

/**
 * One ext_proc stream, i.e. one HTTP request: translates Envoy's messages, which arrive in the order
 * request headers, buffered request body, response headers, buffered response body
 * (docs/ext-proc.md, Message order), into the engine's phase calls on the request's Exchange, and
 * the engine's answers into exactly one ProcessingResponse of the matching type per message.
 */
export class ProcessingStream {
  private phase: Phase = 'start';
  private exchange: Exchange | undefined;

  constructor(private readonly engine: PhaseEngine) {}

  /** What became of the request so far; the outcome is undefined while undecided. */
  get summary(): RequestSummary {
    return this.exchange?.summary() ?? UNDECIDED;
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

  /**
   * The stream ended: whatever the exchange still holds for this request is let go. A stream that
   * ends after its request phase was answered but before any response phase is a request Envoy
   * answered itself: since 1.36 its local replies (router 503/504, 413 over the buffer) skip
   * ext_proc (docs/ext-proc.md, Local replies), so no response phase ever comes.
   */
  close(): void {
    if (this.phase === 'awaiting-request-body' || this.phase === 'awaiting-response-headers') {
      this.exchange?.endWithoutResponsePhase();
    }
    // Awaiting the headers, the engine may be deciding them already: it has set what is owed then.
    if (this.phase === 'awaiting-response-headers' || this.phase === 'awaiting-response-body') this.exchange?.endWithoutResponseBody();
    this.exchange?.dispose();
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
    const exchange = this.engine.begin({ method, path, headers, hasBody: message.request_headers?.end_of_stream !== true });
    this.exchange = exchange;
    const decision = await this.engine.requestHead(exchange);
    if (decision.kind === 'need-body') {
      this.phase = 'awaiting-request-body';
      return { request_headers: { response: {} } };
    }
    if (decision.kind === 'respond') return this.respondImmediately(decision.response);
    this.phase = 'awaiting-response-headers';
    const answer: ProcessingResponse = { request_headers: { response: commonResponse(decision.requestHeaders) } };
    // A request passed through needs neither body looked at, but for the answer to an operation
    // svc-cache cannot see, whose data tells whether it ran: without it, the store would be emptied
    // as for an answer that never came. The response headers still get `svc-cache: PASS`. Body
    // modes in an override are literal (docs/ext-proc.md, Mode override): BUFFERED is the
    // configured response mode (README, Envoy settings).
    if (exchange.passing) {
      answer.mode_override = { request_body_mode: BodySendMode.NONE, response_body_mode: exchange.readsPassedAnswer ? BodySendMode.BUFFERED : BodySendMode.NONE };
    }
    return answer;
  }

  private async onRequestBody(message: ProcessingRequest): Promise<ProcessingResponse> {
    if (this.phase === 'awaiting-response-headers' && this.exchange?.passing) {
      // Envoy without allow_mode_override still sends the body: it is not needed.
      return { request_body: { response: {} } };
    }
    this.expect(['awaiting-request-body'], 'request_body');
    const body = message.request_body?.body ?? Buffer.alloc(0);
    const decision = await this.engine.requestBody(this.exchange!, body);
    if (decision.kind === 'respond') return this.respondImmediately(decision.response);
    this.phase = 'awaiting-response-headers';
    return { request_body: { response: commonResponse(decision.requestHeaders, decision.requestBody) } };
  }

  private async onResponseHeaders(message: ProcessingRequest): Promise<ProcessingResponse> {
    if (this.phase === 'start') {
      // An Envoy local reply made before the request phase reached us (docs/ext-proc.md, Local replies).
      this.exchange = this.engine.begin();
    } else if (this.phase !== 'awaiting-request-body') {
      // In awaiting-request-body, a local reply instead of the body Envoy was buffering.
      this.expect(['awaiting-response-headers'], 'response_headers');
    }
    const headers = headerList(message.response_headers?.headers);
    const endOfStream = message.response_headers?.end_of_stream === true;
    const status = Number(firstValue(headers, ':status'));
    const decision = await this.engine.responseHead(this.exchange!, status, headers, endOfStream);
    // Envoy still holds the origin's response headers: an immediate response goes out in their place (docs/ext-proc.md, Immediate responses).
    if (decision.replacement) return this.respondImmediately(decision.replacement);
    this.phase = decision.wantsBody && !endOfStream ? 'awaiting-response-body' : 'done';
    const answer: ProcessingResponse = { response_headers: { response: commonResponse(decision.headers) } };
    if (!endOfStream && !decision.wantsBody) answer.mode_override = { response_body_mode: BodySendMode.NONE };
    return answer;
  }

  private async onResponseBody(message: ProcessingRequest): Promise<ProcessingResponse> {
    this.expect(['awaiting-response-body'], 'response_body');
    this.phase = 'done';
    const body = message.response_body?.body ?? Buffer.alloc(0);
    const decision = await this.engine.responseBody(this.exchange!, body);
    // BUFFERED: the headers are held until this answer, so the origin's response is still replaceable.
    if (decision.replacement) return this.respondImmediately(decision.replacement);
    return { response_body: { response: commonResponse(decision.headers, decision.body) } };
  }

  private respondImmediately(response: HttpResponse): ProcessingResponse {
    this.phase = 'done';
    return {
      immediate_response: {
        status: { code: response.status },
        headers: { set_headers: headerOptions(response.headers) },
        body: response.body,
      },
    };
  }

  private expect(phases: readonly Phase[], received: string): void {
    if (!phases.includes(this.phase)) {
      throw new ProtocolViolation(`unexpected ${received} while ${this.phase}`);
    }
  }
}

const UNDECIDED: RequestSummary = {
  outcome: undefined,
  passReason: undefined,
  errorCode: undefined,
  operationName: undefined,
  documentHash: undefined,
  originLatencyMs: undefined,
  bytesServedFromCache: 0,
};

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
 * `raw_value`, Envoy before 1.27 `value` (docs/ext-proc.md, Header values).
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
 * carries its own length in the same answer (docs/ext-proc.md, Body rewrites and content-length).
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
 * sets its first value and appends the rest (docs/ext-proc.md, Header values).
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
