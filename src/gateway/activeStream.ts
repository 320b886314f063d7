import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { Logger } from '../observability/index.js';
import { mutateRequestHeaders, type ConnectionAddresses, type ConnectionManagerConfig } from './connectionManager.js';
import { ExtProcFilter, type FilterCallbacks } from './extProcFilter.js';
import type { FilterConfig } from './filterConfig.js';
import { HeaderMap } from './headerMap.js';
import type { DownstreamRequest, DownstreamResponse } from './listener.js';
import { envoyReplies, prepareLocalReply, type LocalReply } from './localReply.js';
import { MessageBody } from './messageBody.js';
import type { MutationChecker } from './mutation.js';
import type { ProcessorClient } from './processorClient.js';
import type { GatewayStatsCollector, RequestRecord } from './stats.js';
import type { Router, UpstreamRequest } from './upstream.js';

export interface StreamContext {
  config: FilterConfig;
  connectionManager: ConnectionManagerConfig;
  client: ProcessorClient;
  checker: MutationChecker;
  router: Router;
  stats: GatewayStatsCollector;
  logger: Logger;
}

/** Headers the connection manager never passes on: they describe one hop, not the message (RFC 9110 §7.6.1). */
const HOP_BY_HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/**
 * One HTTP request through the gateway, as Envoy's connection manager, filter chain (ext_proc, then the
 * router) and HTTP/1 codec handle it: request headers → ext_proc decode → origin → ext_proc encode →
 * client, with local replies that enter the response path wherever Envoy would send them.
 */
export class ActiveStream implements FilterCallbacks {
  private stage = new Stage();
  private readonly filter: ExtProcFilter;
  private readonly record: RequestRecord;
  private readonly isHeadRequest: boolean;
  private requestBody = MessageBody.absent();
  private responseBody = MessageBody.absent();
  private upstream: UpstreamRequest | undefined;
  /** Response headers have entered the encoder path; later local replies bypass the filters (docs/ext-proc.md, Immediate responses). */
  private responseStarted = false;
  private recorded = false;
  private resetByGateway = false;
  private destroyed = false;

  constructor(
    private readonly context: StreamContext,
    private readonly request: DownstreamRequest,
    private readonly response: DownstreamResponse,
    private readonly addresses: ConnectionAddresses,
  ) {
    this.isHeadRequest = request.method === 'HEAD';
    this.record = {
      requestId: '',
      method: request.method ?? '',
      path: request.url ?? '',
      responseCode: 0,
      responseCodeDetails: '',
      processorMessages: [],
    };
    this.filter = new ExtProcFilter({ ...context, record: this.record }, this);
    response.on('close', () => this.onDownstreamClose());
    // Writing to a client that has gone fails here; 'close' above is where that is handled.
    response.on('error', () => undefined);
  }

  start(): void {
    this.run().catch((error: unknown) => this.onInternalError(error));
  }

  /** Envoy's sendLocalReply: through the encoder filters if no response started, else straight out or a reset. */
  sendLocalReply(reply: LocalReply): void {
    if (this.destroyed) return;
    // FilterManager::sendLocalReply tells every filter first (Filter::onLocalReply).
    this.filter.onLocalReply();
    this.stage.interrupt();
    const stage = (this.stage = new Stage());
    this.upstream?.abort();
    this.responseBody.discard();
    if (!this.responseStarted) {
      this.encodeLocalReply(stage, reply).catch((error: unknown) => this.onInternalError(error));
    } else if (!this.response.headersSent) {
      try {
        const prepared = prepareLocalReply(reply, this.isHeadRequest);
        this.writeResponseHead(prepared.headers, reply.details, prepared.body.length === 0);
        this.response.end(prepared.body);
        this.onResponseComplete();
      } catch (error) {
        this.onInternalError(error);
      }
    } else {
      this.resetDownstream(reply.details);
    }
  }

  private async run(): Promise<void> {
    const stage = this.stage;
    const { config, router } = this.context;
    const headers = requestHeaders(this.request, this.addresses, this.context.connectionManager);
    this.record.requestId = headers.get('x-request-id') ?? '';
    if (requestHasBody(this.request)) {
      const request = this.request;
      this.requestBody = MessageBody.reading(
        request,
        config.bufferLimitBytes,
        () => this.sendLocalReply(envoyReplies.requestPayloadTooLarge()),
        () => isHttp2(request) && Object.keys(request.trailers).length > 0,
      );
    }

    if ((await stage.race(this.filter.decodeHeaders(headers, this.requestBody))) === INTERRUPTED) return;
    const body = this.requestBody;
    const upstream = router.forward(headers, !body.isAbsent, (details) => this.resetDownstream(details));
    this.upstream = upstream;
    if (body.isAbsent) {
      upstream.request.end();
    } else {
      upstream.request.flushHeaders();
      if ((await stage.race(this.filter.decodeBody())) === INTERRUPTED) return;
      body.pipeTo(upstream.request);
    }

    const outcome = await stage.race(upstream.outcome);
    if (outcome === INTERRUPTED) return;
    if (outcome.kind === 'failure') {
      this.sendLocalReply(outcome.reply);
      return;
    }
    const { response, serviceTimeMs } = outcome;
    if (responseHasBody(response, this.isHeadRequest)) {
      this.responseBody = MessageBody.reading(response, config.bufferLimitBytes, () =>
        this.sendLocalReply(envoyReplies.responsePayloadTooLarge()),
      );
    }
    const fromOrigin = responseHeaders(response, serviceTimeMs, router.suppressEnvoyHeaders);
    await this.encode(stage, fromOrigin, this.responseBody, 'via_upstream');
  }

  private async encodeLocalReply(stage: Stage, reply: LocalReply): Promise<void> {
    const prepared = prepareLocalReply(reply, this.isHeadRequest);
    this.responseBody = prepared.body.length > 0 ? MessageBody.fixed(prepared.body) : MessageBody.absent();
    await this.encode(stage, prepared.headers, this.responseBody, reply.details);
  }

  private async encode(stage: Stage, headers: HeaderMap, body: MessageBody, details: string): Promise<void> {
    this.responseStarted = true;
    if ((await stage.race(this.filter.encodeHeaders(headers, body))) === INTERRUPTED) return;
    this.writeResponseHead(headers, details, body.isAbsent);
    if (body.isAbsent) {
      this.response.end();
      this.onResponseComplete();
      return;
    }
    // Headers go out now so that a body the filter no longer holds (e.g. text/event-stream) streams.
    // Http2ServerResponse has flushHeaders too, though @types/node leaves it out.
    (this.response as { flushHeaders(): void }).flushHeaders();
    if ((await stage.race(this.filter.encodeBody())) === INTERRUPTED) return;
    body.pipeTo(this.response, () => this.onResponseComplete());
  }

  /**
   * The whole response is with the codec: Envoy's stream is over and its filters are destroyed in the same
   * dispatch, so whatever the processor sends afterwards (even an error status) can no longer matter.
   */
  private onResponseComplete(): void {
    this.filter.onDestroy();
  }

  /** The HTTP/1 codec's view: no pseudo-headers, no hop-by-hop headers, Envoy's `server`. */
  private writeResponseHead(headers: HeaderMap, details: string, headersOnly: boolean): void {
    const status = Number(headers.get(':status'));
    const lines: string[] = [];
    for (const [name, value] of headers.entries()) {
      if (!name.startsWith(':') && !HOP_BY_HOP_HEADERS.has(name) && name !== 'server') lines.push(name, value);
    }
    // Envoy's HTTP/1 codec frames a headers-only response with an explicit zero length where a body is allowed.
    const bodyAllowed = !this.isHeadRequest && status >= 200 && status !== 204 && status !== 304;
    const http1 = !isHttp2(this.request);
    if (http1 && headersOnly && bodyAllowed && !headers.has('content-length')) lines.push('content-length', '0');
    // server_header_transformation defaults to OVERWRITE.
    lines.push('server', 'envoy');
    if (!this.request.complete) {
      // Answering before the whole request was read leaves an HTTP/1 connection unusable, so Envoy closes it.
      if (http1) lines.push('connection', 'close');
      this.requestBody.discard();
    }
    this.finishRecord(status, details);
    this.response.writeHead(status, lines as never);
  }

  private resetDownstream(details: string): void {
    this.resetByGateway = true;
    this.finishRecord(this.response.headersSent ? this.response.statusCode : 0, details);
    this.response.destroy();
  }

  private onDownstreamClose(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (!this.response.writableFinished && !this.resetByGateway) this.finishRecord(0, 'downstream_remote_disconnect');
    this.stage.interrupt();
    this.upstream?.abort();
    this.requestBody.discard();
    this.responseBody.discard();
    this.filter.onDestroy();
  }

  private onInternalError(error: unknown): void {
    this.context.logger.error({ err: error, requestId: this.record.requestId }, 'gateway failed a request');
    this.resetDownstream('gateway_internal_error');
  }

  /** The access-log view of the request; a reset after the head was written keeps the code it sent. */
  private finishRecord(status: number, details: string): void {
    if (!this.recorded || status !== 0) this.record.responseCode = status;
    this.record.responseCodeDetails = details;
    if (this.recorded) return;
    this.recorded = true;
    this.context.stats.record(this.record);
    this.context.logger.debug(
      { code: status, details, method: this.record.method, path: this.record.path, requestId: this.record.requestId },
      'request finished',
    );
  }
}

const INTERRUPTED = Symbol('interrupted');

/** One attempt at producing the response; a local reply interrupts it and starts another. */
class Stage {
  private interruptStage!: () => void;
  private readonly interrupted = new Promise<typeof INTERRUPTED>((resolve) => {
    this.interruptStage = () => resolve(INTERRUPTED);
  });

  race<T>(promise: Promise<T>): Promise<T | typeof INTERRUPTED> {
    return Promise.race([promise, this.interrupted]);
  }

  interrupt(): void {
    this.interruptStage();
  }
}

/**
 * The request headers ext_proc sees: HTTP/1 `Host` as `:authority`, pseudo-headers first, hop-by-hop
 * headers gone, and what the connection manager adds before any filter runs (docs/ext-proc.md, Message order).
 */
function requestHeaders(
  request: DownstreamRequest,
  addresses: ConnectionAddresses,
  connectionManager: ConnectionManagerConfig,
): HeaderMap {
  const headers = new HeaderMap();
  headers.add(':authority', (isHttp2(request) ? request.authority : request.headers.host) ?? '');
  headers.add(':path', request.url ?? '/');
  headers.add(':method', request.method ?? 'GET');
  headers.add(':scheme', 'http');
  const raw = request.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] ?? '').toLowerCase();
    const value = raw[index + 1] ?? '';
    if (name === 'host' || name.startsWith(':') || HOP_BY_HOP_HEADERS.has(name)) continue;
    // Envoy answers `Expect: 100-continue` itself and drops the header.
    if (name === 'expect' && value.toLowerCase() === '100-continue') continue;
    // TE is sanitised to the one value that may cross a hop.
    if (name === 'te') {
      if (value.split(',').some((token) => token.trim().toLowerCase() === 'trailers')) headers.add('te', 'trailers');
      continue;
    }
    headers.add(name, value);
  }
  mutateRequestHeaders(headers, addresses, connectionManager);
  return headers;
}

/** The origin's response headers as the router hands them to the encoder filters. */
function responseHeaders(response: IncomingMessage, serviceTimeMs: number, suppressEnvoyHeaders: boolean): HeaderMap {
  const headers = new HeaderMap([[':status', String(response.statusCode ?? 502)]]);
  const raw = response.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) headers.add(raw[index] ?? '', raw[index + 1] ?? '');
  if (!suppressEnvoyHeaders) headers.set('x-envoy-upstream-service-time', String(serviceTimeMs));
  return headers;
}

/**
 * Whether the headers end the stream (docs/ext-proc.md, Message order). HTTP/1: no length and no chunking is no
 * body. HTTP/2: only END_STREAM on the HEADERS frame is; a GET may still be followed by an empty DATA frame.
 */
function requestHasBody(request: DownstreamRequest): boolean {
  if (isHttp2(request)) return !request.stream.endAfterHeaders;
  if (request.headers['transfer-encoding'] !== undefined) return true;
  return Number(request.headers['content-length'] ?? 0) > 0;
}

function responseHasBody(response: IncomingMessage, isHeadRequest: boolean): boolean {
  const status = response.statusCode ?? 200;
  if (isHeadRequest || status < 200 || status === 204 || status === 304) return false;
  if (response.headers['transfer-encoding'] !== undefined) return true;
  const contentLength = response.headers['content-length'];
  return contentLength === undefined || Number(contentLength) > 0;
}

function isHttp2(request: DownstreamRequest): request is Http2ServerRequest {
  return request.httpVersionMajor === 2;
}
