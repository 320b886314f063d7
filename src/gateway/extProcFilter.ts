import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  BodySendMode,
  HeaderSendMode,
  ResponseStatus,
  type BodyMutation,
  type BodyResponse,
  type CommonResponse,
  type HeaderMutation,
  type HeadersResponse,
  type ImmediateResponse,
  type ProcessingMode,
  type ProcessingRequest,
  type ProcessingResponse,
} from '../extproc/index.js';
import type { Logger } from '../observability/index.js';
import { bodyModeName, type FilterConfig } from './filterConfig.js';
import { headerMapToMessage, type HeaderMap } from './headerMap.js';
import { responseCodeDetails, type LocalReply } from './localReply.js';
import type { MessageBody } from './messageBody.js';
import {
  applyBodyMutation,
  applyHeaderMutation,
  MutationChecker,
  mutatedBodyLength,
  type MutationContext,
} from './mutation.js';
import type { ProcessorClient, ProcessorStream } from './processorClient.js';
import type { GatewayStatsCollector, RequestRecord } from './stats.js';
import { deferred } from '../util/index.js';

export interface FilterCallbacks {
  /** The filter answers the HTTP request itself: an immediate_response or an ext_proc error. */
  sendLocalReply(reply: LocalReply): void;
}

export interface FilterContext {
  config: FilterConfig;
  client: ProcessorClient;
  stats: GatewayStatsCollector;
  /** Built once from `config.mutationRules`. */
  checker: MutationChecker;
  logger: Logger;
  record: RequestRecord;
}

/**
 * Envoy's ext_proc HTTP filter for one HTTP request (docs/ext-proc.md, Message order): one lazily opened Process
 * stream, one outstanding message per direction with its timer, answers applied under the mutation and
 * content-length rules, and the failure handling of docs/ext-proc.md, Timeouts and failure modes.
 *
 * The connection manager drives it: `decodeHeaders` settles when the request headers may go on (for a
 * BUFFERED body that is after the body answer, since the headers are held until then), `decodeBody` when
 * the request body may go on; `encodeHeaders`/`encodeBody` likewise for the response. A message's
 * `MessageBody` is where body mutations land. When the filter answers the request itself it calls
 * `sendLocalReply`, and the promises of the interrupted phase never settle.
 */
export class ExtProcFilter {
  private readonly decoding = new DirectionState('request');
  private readonly encoding = new DirectionState('response');
  private stream: ProcessorStream | undefined;
  private processingComplete = false;
  private protocolConfigSent = false;
  private readonly mutationContext: MutationContext;

  constructor(
    private readonly context: FilterContext,
    private readonly callbacks: FilterCallbacks,
  ) {
    this.decoding.setProcessingMode(context.config.processingMode);
    this.encoding.setProcessingMode(context.config.processingMode);
    this.mutationContext = {
      checker: context.checker,
      profile: context.config.envoy,
      onRejected: () => context.stats.increment('rejected_header_mutations'),
    };
  }

  decodeHeaders(headers: HeaderMap, body: MessageBody): Promise<void> {
    return this.onHeaders(this.decoding, headers, body);
  }

  decodeBody(): Promise<void> {
    return this.decoding.bodyGate.promise;
  }

  encodeHeaders(headers: HeaderMap, body: MessageBody): Promise<void> {
    return this.onHeaders(this.encoding, headers, body);
  }

  encodeBody(): Promise<void> {
    return this.encoding.bodyGate.promise;
  }

  /**
   * Envoy's Filter::onLocalReply: the connection manager is about to answer the request itself. Since 1.34
   * that ends external processing (docs/ext-proc.md, Local replies): the reply is not shown to the server,
   * and the stream, still open, is closed with the HTTP stream (onDestroy).
   */
  onLocalReply(): void {
    if (!this.context.config.envoy.skipExtProcOnLocalReply) return;
    this.processingComplete = true;
    this.finishCalls();
  }

  /**
   * Envoy's Filter::onDestroy: the HTTP stream is over (answered or reset). In 1.36 this is where a stream
   * that no error, timeout or immediate response ended gets closed (docs/ext-proc.md, Stream close).
   */
  onDestroy(): void {
    this.decoding.stopTimer();
    this.encoding.stopTimer();
    this.closeStream();
  }

  private onHeaders(state: DirectionState, headers: HeaderMap, body: MessageBody): Promise<void> {
    state.body = body;
    if (this.processingComplete || !state.sendHeaders) {
      if (this.shouldRemoveContentLength(state)) headers.remove('content-length');
      state.headersGate.open();
      this.processBodyWithoutHeaders(state);
      return state.headersGate.promise;
    }
    state.heldHeaders = headers;
    state.noBody = body.isAbsent;
    this.send(state, 'headers', {
      [state.headersCase]: {
        headers: headerMapToMessage(headers, this.context.config.envoy),
        end_of_stream: body.isAbsent,
      },
    });
    if (this.shouldRemoveContentLength(state)) headers.remove('content-length');
    // While the headers call is outstanding a BUFFERED filter asks for the body to be buffered, which is
    // what makes an oversized body a 413 (docs/ext-proc.md, Buffer limits); before ≈1.35 it only raised a
    // watermark. Body data reaches the filter after its headers, so this comes after the headers message.
    const bufferWhileWaiting =
      state.bodyMode === BodySendMode.BUFFERED && this.context.config.envoy.buffered413WhileWaiting;
    body.setHold(bufferWhileWaiting ? 'buffer' : 'watermark');
    return state.headersGate.promise;
  }

  /** Header phase skipped or over: a BUFFERED body is still sent on its own, anything else passes. */
  private processBodyWithoutHeaders(state: DirectionState): void {
    if (this.processingComplete || state.body.isAbsent || state.bodyMode === BodySendMode.NONE) {
      state.bodyGate.open();
    } else if (state.bodyMode === BodySendMode.BUFFERED) {
      void this.sendBufferedBody(state);
    } else {
      this.handleErrorResponse(unemulatedBodyMode(state.bodyMode));
    }
  }

  private async sendBufferedBody(state: DirectionState): Promise<void> {
    // Before ≈1.35 a body that overflowed while the headers call was outstanding stalled the request (docs/ext-proc.md, Timeouts and failure modes).
    if (!this.context.config.envoy.buffered413WhileWaiting && state.body.exceedsLimit) return;
    state.body.setHold('buffer');
    const body = await state.body.complete();
    if (body === undefined || this.processingComplete) return;
    // Trailers (HTTP/2 only here: the HTTP/1 codec drops them unless enable_trailers is set) make Envoy send
    // the buffered body from onTrailers, not as the end of the stream (docs/ext-proc.md, HTTP/2 requests).
    this.send(state, 'body', { [state.bodyCase]: { body, end_of_stream: !state.body.endsWithTrailers } });
  }

  private send(state: DirectionState, call: 'headers' | 'body', request: ProcessingRequest): void {
    if (!this.stream) {
      this.stream = this.context.client.openStream({
        message: (response) => this.onReceiveMessage(response),
        remoteClose: (code, details) => this.onRemoteClose(code, details),
      });
      this.context.stats.increment('streams_started');
    }
    request.metadata_context = {};
    if (this.context.config.envoy.protocolConfigFirstMessage && !this.protocolConfigSent) {
      request.protocol_config = {
        request_body_mode: this.decoding.bodyMode,
        response_body_mode: this.encoding.bodyMode,
        send_body_without_waiting_for_header_response: false,
      };
      this.protocolConfigSent = true;
    }
    state.startCall(call, this.context.config.messageTimeoutMs, () => this.onMessageTimeout());
    this.stream.send(request);
    this.context.stats.increment('stream_msgs_sent');
    this.context.record.processorMessages.push({ direction: 'sent', type: requestType(request) });
  }

  private onReceiveMessage(response: ProcessingResponse): void {
    this.context.record.processorMessages.push({ direction: 'received', type: responseType(response) });
    if (this.processingComplete) return;
    // A message carrying override_message_timeout is only a timer extension; the rest of it is ignored (docs/ext-proc.md, Timeouts and failure modes).
    if (response.override_message_timeout !== undefined) {
      this.onNewTimeout(response.override_message_timeout);
      return;
    }
    if (this.context.config.allowModeOverride && this.inHeaderProcessState && response.mode_override) {
      this.applyModeOverride(response.mode_override);
    }

    const problem = this.dispatch(response);
    if (problem === undefined) {
      this.context.stats.increment('stream_msgs_received');
    } else if (problem.kind === 'spurious') {
      this.onSpuriousMessage(problem.message);
    } else {
      this.context.stats.increment('stream_msgs_received');
      this.handleErrorResponse(problem.message);
    }
  }

  private dispatch(response: ProcessingResponse): Problem | undefined {
    switch (response.response) {
      case 'request_headers':
        return this.handleHeadersResponse(this.decoding, response.request_headers);
      case 'response_headers':
        return this.handleHeadersResponse(this.encoding, response.response_headers);
      case 'request_body':
        return this.handleBodyResponse(this.decoding, response.request_body);
      case 'response_body':
        return this.handleBodyResponse(this.encoding, response.response_body);
      case 'immediate_response':
        if (this.context.config.disableImmediateResponse) {
          return spurious('unhandled immediate response due to config disabled it');
        }
        this.processingComplete = true;
        this.finishCalls();
        this.closeStream();
        this.sendImmediateResponse(response.immediate_response ?? {});
        return undefined;
      default:
        // Trailers are never sent over HTTP/1 here, so their answers are out of order like any other case.
        return spurious(response.response === undefined ? 'unhandled message' : 'spurious message');
    }
  }

  private handleHeadersResponse(state: DirectionState, answer: HeadersResponse | undefined): Problem | undefined {
    if (state.callbackState !== 'headers') return spurious('spurious message');
    const common: CommonResponse = answer?.response ?? {};
    const replacing = common.status === ResponseStatus.CONTINUE_AND_REPLACE;
    if (common.header_mutation) {
      const failure = this.mutateHeldHeaders(state, common.header_mutation, replacing);
      if (failure !== undefined) return error(failure);
    }
    this.countRouteCacheClear(state, common);
    state.finishCall();

    if (replacing) {
      if (common.body_mutation) {
        // Envoy drops content-length itself here; the server is not expected to set it (docs/ext-proc.md, Body rewrites and content-length).
        state.heldHeaders?.remove('content-length');
        state.body.replace(applyBodyMutation(common.body_mutation, state.body.heldBytes()));
      }
      // Nothing more of this message goes to the server (docs/ext-proc.md, Message order).
      state.bodyMode = BodySendMode.NONE;
      state.sendTrailers = false;
      state.releaseHeldMessage();
      return undefined;
    }
    if (state.noBody || state.bodyMode === BodySendMode.NONE) {
      state.releaseHeldMessage();
      return undefined;
    }
    if (state.bodyMode !== BodySendMode.BUFFERED) return error(unemulatedBodyMode(state.bodyMode));
    void this.sendBufferedBody(state);
    return undefined;
  }

  private handleBodyResponse(state: DirectionState, answer: BodyResponse | undefined): Problem | undefined {
    if (state.callbackState !== 'body') return spurious('spurious message');
    const common: CommonResponse = answer?.response ?? {};
    // Header changes in a body answer reach the message only while its headers are still held (docs/ext-proc.md, Header mutations).
    if (common.header_mutation && state.heldHeaders) {
      const replacing = common.status === ResponseStatus.CONTINUE_AND_REPLACE;
      const failure = this.mutateHeldHeaders(state, common.header_mutation, replacing);
      if (failure !== undefined) return error(failure);
    }
    if (common.body_mutation) {
      const failure = this.applyContentLengthRules(state, common.body_mutation);
      if (failure !== undefined) return error(failure);
      state.body.replace(applyBodyMutation(common.body_mutation, state.body.heldBytes()));
    }
    state.finishCall();
    this.countRouteCacheClear(state, common);
    state.releaseHeldMessage();
    return undefined;
  }

  /** Since 1.29 a held content-length must match the new body; before, it was dropped (docs/ext-proc.md, Body rewrites and content-length). */
  private applyContentLengthRules(state: DirectionState, mutation: BodyMutation): string | undefined {
    const headers = state.heldHeaders;
    if (!headers) return undefined;
    if (this.context.config.envoy.contentLengthRules === 'strip-on-mutation') {
      headers.remove('content-length');
      return undefined;
    }
    const contentLength = headers.get('content-length');
    if (contentLength === undefined || !/^\d+$/.test(contentLength)) return undefined;
    return Number(contentLength) === mutatedBodyLength(mutation)
      ? undefined
      : 'mismatch between content length and the length of the mutated body';
  }

  private mutateHeldHeaders(state: DirectionState, mutation: HeaderMutation, replacing: boolean): string | undefined {
    if (!state.heldHeaders) return undefined;
    return applyHeaderMutation(
      mutation,
      state.heldHeaders,
      { replacingMessage: replacing, skipContentLength: this.shouldRemoveContentLength(state) },
      this.mutationContext,
    );
  }

  /** The body modes in which Envoy owns content-length, removing it up front (docs/ext-proc.md, Body rewrites and content-length). */
  private shouldRemoveContentLength(state: DirectionState): boolean {
    if (this.processingComplete || this.context.config.envoy.contentLengthRules !== 'validate') return false;
    return (
      state.bodyMode === BodySendMode.STREAMED ||
      state.bodyMode === BodySendMode.BUFFERED_PARTIAL ||
      state.bodyMode === BodySendMode.FULL_DUPLEX_STREAMED ||
      (state.bodyMode === BodySendMode.BUFFERED && !state.sendHeaders)
    );
  }

  /** clear_route_cache is honoured only with a header_mutation, on the request path; the gateway has one route. */
  private countRouteCacheClear(state: DirectionState, common: CommonResponse): void {
    if (state.direction === 'request' && common.clear_route_cache && !common.header_mutation) {
      this.context.stats.increment('clear_route_cache_ignored');
    }
  }

  /** Status below 200 becomes 200, headers pass the mutation rules, details lose their whitespace (docs/ext-proc.md, Immediate responses). */
  private sendImmediateResponse(immediate: ImmediateResponse): void {
    const code = immediate.status?.code ?? 200;
    const checker = this.context.config.envoy.immediateResponseUsesFilterMutationRules
      ? this.context.checker
      : MutationChecker.permissive();
    const mutation = immediate.headers;
    this.callbacks.sendLocalReply({
      status: code >= 200 ? code : 200,
      body: immediate.body ?? Buffer.alloc(0),
      details: responseCodeDetails(immediate.details ?? ''),
      mutateHeaders: mutation
        ? (headers) => {
            const failure = applyHeaderMutation(
              mutation,
              headers,
              { replacingMessage: false, skipContentLength: false },
              { ...this.mutationContext, checker },
            );
            // A failed mutation only costs the remaining changes; the reply is still sent (docs/ext-proc.md, Immediate responses).
            if (failure !== undefined) {
              this.context.logger.warn({ failure }, 'immediate response header mutation failed');
            }
          }
        : undefined,
    });
  }

  /**
   * An answer Envoy cannot apply, or a failed stream when failing closed (docs/ext-proc.md, Timeouts and failure modes), ends
   * processing with an empty-bodied local reply of status_on_error.
   */
  private handleErrorResponse(message: string): void {
    this.processingComplete = true;
    this.finishCalls();
    this.closeStream();
    this.callbacks.sendLocalReply({
      status: this.statusOnError,
      body: Buffer.alloc(0),
      details: responseCodeDetails(message),
    });
  }

  private onSpuriousMessage(message: string): void {
    const { config, stats, logger } = this.context;
    stats.increment('spurious_msgs_received');
    if (config.failureModeAllow || !config.envoy.spuriousFailsClosed) {
      // The ≈1.35 code path that made spurious answers fail closed also counts the fail-open case.
      if (config.envoy.spuriousFailsClosed) stats.increment('failure_mode_allowed');
      logger.warn({ message }, 'spurious ext_proc answer: continuing without the processor');
      this.closeStream();
      this.clearAsyncState();
      return;
    }
    this.handleErrorResponse(message);
  }

  private onRemoteClose(code: GrpcStatus, details: string): void {
    if (code === GrpcStatus.OK) this.onGrpcClose();
    else this.onGrpcError(code, details);
  }

  /** A clean close: the rest of the request and response go on without the processor (docs/ext-proc.md, Timeouts and failure modes). */
  private onGrpcClose(): void {
    if (this.processingComplete) return;
    this.context.stats.increment('streams_closed');
    this.closeStream();
    this.clearAsyncState();
  }

  private onGrpcError(code: GrpcStatus, details: string): void {
    const { config, stats, logger } = this.context;
    stats.increment('streams_failed');
    if (this.processingComplete) return;
    logger.warn({ code, details }, 'ext_proc stream failed');
    if (config.failureModeAllow) {
      this.onGrpcClose();
      stats.increment('failure_mode_allowed');
      return;
    }
    this.handleErrorResponse(`ext_proc_error_gRPC_error_${code}{${details}}`);
  }

  private onMessageTimeout(): void {
    const { config, stats, logger } = this.context;
    stats.increment('message_timeouts');
    logger.warn({ timeoutMs: config.messageTimeoutMs }, 'ext_proc message timeout');
    this.processingComplete = true;
    this.closeStream();
    if (config.failureModeAllow) {
      stats.increment('failure_mode_allowed');
      this.clearAsyncState();
      return;
    }
    this.finishCalls();
    this.callbacks.sendLocalReply({
      status: config.envoy.timeoutStatus,
      body: Buffer.alloc(0),
      details: 'ext_proc_error_per-message_timeout_exceeded',
    });
  }

  /** override_message_timeout: accepted once per call, while the timer runs, for 1 ms up to max_message_timeout (docs/ext-proc.md, Timeouts and failure modes). */
  private onNewTimeout(duration: { seconds?: number | string; nanos?: number }): void {
    const { config, stats } = this.context;
    const timeoutMs = Number(duration.seconds ?? 0) * 1000 + Math.trunc((duration.nanos ?? 0) / 1e6);
    if (!Number.isFinite(timeoutMs) || timeoutMs < 1 || timeoutMs > config.maxMessageTimeoutMs) {
      stats.increment('override_message_timeout_ignored');
      return;
    }
    const restarted = [this.decoding, this.encoding].map((state) => state.restartTimer(timeoutMs));
    const accepted = restarted.includes(true);
    stats.increment(accepted ? 'override_message_timeout_received' : 'override_message_timeout_ignored');
  }

  /** A mode_override, applied to both directions before the answer itself (docs/ext-proc.md, Mode override). */
  private applyModeOverride(override: ProcessingMode): void {
    const { config, logger } = this.context;
    const mode = config.envoy.modeOverrideDefaultIsUnchanged
      ? overrideKeepingDefaults(override, config.processingMode)
      : override;
    const allowed = config.allowedOverrideModes;
    if (allowed.length > 0 && !allowed.some((entry) => sameOverrideMode(entry, mode))) {
      logger.debug({ mode }, 'mode_override not in allowed_override_modes');
      return;
    }
    this.decoding.setProcessingMode(mode);
    this.encoding.setProcessingMode(mode);
  }

  /** Lets both directions go on untouched, as after a clean close or a fail-open error. */
  private clearAsyncState(): void {
    for (const state of [this.decoding, this.encoding]) {
      state.finishCall();
      state.releaseHeldMessage();
    }
  }

  private finishCalls(): void {
    this.decoding.finishCall();
    this.encoding.finishCall();
  }

  /** Half-close then cancel; afterwards the filter never talks to the processor again for this request. */
  private closeStream(): void {
    this.processingComplete = true;
    if (!this.stream) return;
    if (this.stream.close()) this.context.stats.increment('streams_closed');
    this.stream = undefined;
  }

  private get inHeaderProcessState(): boolean {
    return this.decoding.callbackState === 'headers' || this.encoding.callbackState === 'headers';
  }

  /** Envoy's toErrorCode: status_on_error outside 400-599 is answered as 500 (docs/ext-proc.md, Timeouts and failure modes). */
  private get statusOnError(): number {
    const status = this.context.config.statusOnError;
    if (!this.context.config.envoy.statusOnErrorSupported || status < 400 || status > 599) return 500;
    return status;
  }
}

type Problem = { kind: 'spurious' | 'error'; message: string };

function spurious(message: string): Problem {
  return { kind: 'spurious', message };
}

function error(message: string): Problem {
  return { kind: 'error', message };
}

function unemulatedBodyMode(mode: number): string {
  return `the gateway does not emulate the ${bodyModeName(mode)} body mode`;
}

/** What Envoy keeps per direction (its ProcessorState): modes, the outstanding call, the held message. */
class DirectionState {
  sendHeaders = true;
  sendTrailers = false;
  bodyMode: number = BodySendMode.NONE;
  callbackState: 'idle' | 'headers' | 'body' = 'idle';
  heldHeaders: HeaderMap | undefined;
  noBody = false;
  body!: MessageBody;
  readonly headersGate = new Gate();
  readonly bodyGate = new Gate();
  private timer: NodeJS.Timeout | undefined;
  private onTimeout: () => void = () => undefined;
  private timeoutOverridden = false;

  constructor(readonly direction: 'request' | 'response') {}

  get headersCase(): 'request_headers' | 'response_headers' {
    return this.direction === 'request' ? 'request_headers' : 'response_headers';
  }

  get bodyCase(): 'request_body' | 'response_body' {
    return this.direction === 'request' ? 'request_body' : 'response_body';
  }

  /** DEFAULT headers mean SEND and DEFAULT trailers mean SKIP (docs/ext-proc.md, Mode override). */
  setProcessingMode(mode: ProcessingMode): void {
    const headerMode = this.direction === 'request' ? mode.request_header_mode : mode.response_header_mode;
    const trailerMode = this.direction === 'request' ? mode.request_trailer_mode : mode.response_trailer_mode;
    const bodyMode = this.direction === 'request' ? mode.request_body_mode : mode.response_body_mode;
    this.sendHeaders = (headerMode ?? HeaderSendMode.DEFAULT) !== HeaderSendMode.SKIP;
    this.sendTrailers = trailerMode === HeaderSendMode.SEND;
    this.bodyMode = bodyMode ?? BodySendMode.NONE;
  }

  startCall(call: 'headers' | 'body', timeoutMs: number, onTimeout: () => void): void {
    this.callbackState = call;
    this.timeoutOverridden = false;
    this.onTimeout = onTimeout;
    this.stopTimer();
    this.timer = setTimeout(onTimeout, timeoutMs);
  }

  finishCall(): void {
    this.stopTimer();
    this.callbackState = 'idle';
    this.timeoutOverridden = false;
  }

  restartTimer(timeoutMs: number): boolean {
    if (this.timer === undefined || this.timeoutOverridden) return false;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.onTimeout, timeoutMs);
    this.timeoutOverridden = true;
    return true;
  }

  stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The headers (and the body, whatever it holds now) go on. */
  releaseHeldMessage(): void {
    this.heldHeaders = undefined;
    this.headersGate.open();
    this.bodyGate.open();
  }
}

/** Since ≈1.34 DEFAULT header and trailer modes keep the configured mode; body modes are literal (docs/ext-proc.md, Mode override). */
function overrideKeepingDefaults(override: ProcessingMode, configured: ProcessingMode): ProcessingMode {
  const keep = (value: number | undefined, current: number | undefined): number | undefined =>
    (value ?? HeaderSendMode.DEFAULT) === HeaderSendMode.DEFAULT ? current : value;
  return {
    request_header_mode: keep(override.request_header_mode, configured.request_header_mode),
    response_header_mode: keep(override.response_header_mode, configured.response_header_mode),
    request_trailer_mode: keep(override.request_trailer_mode, configured.request_trailer_mode),
    response_trailer_mode: keep(override.response_trailer_mode, configured.response_trailer_mode),
    request_body_mode: override.request_body_mode ?? BodySendMode.NONE,
    response_body_mode: override.response_body_mode ?? BodySendMode.NONE,
  };
}

/** allowed_override_modes ignores request_header_mode: the request headers were already sent. */
function sameOverrideMode(allowed: ProcessingMode, mode: ProcessingMode): boolean {
  const fields = [
    'request_body_mode',
    'request_trailer_mode',
    'response_header_mode',
    'response_body_mode',
    'response_trailer_mode',
  ] as const;
  return fields.every((field) => (allowed[field] ?? 0) === (mode[field] ?? 0));
}

/** A one-shot signal that a held message may go on. */
class Gate {
  private readonly opening = deferred();
  readonly promise = this.opening.promise;

  open(): void {
    this.opening.resolve();
  }
}

function requestType(request: ProcessingRequest): string {
  return request.request_headers
    ? 'request_headers'
    : request.request_body
      ? 'request_body'
      : request.response_headers
        ? 'response_headers'
        : 'response_body';
}

function responseType(response: ProcessingResponse): string {
  if (response.override_message_timeout !== undefined) return 'override_message_timeout';
  return response.response ?? 'empty';
}
