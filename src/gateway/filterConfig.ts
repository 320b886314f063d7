import { BodySendMode, HeaderSendMode, type ProcessingMode } from '../extproc/index.js';

/** Envoy's HeaderMutationRules (docs/ext-proc.md, Header mutations); every field absent means the default. */
export interface MutationRules {
  allowAllRouting?: boolean;
  allowEnvoy?: boolean;
  disallowSystem?: boolean;
  disallowAll?: boolean;
  /** Matched against the whole lower-case header name. */
  allowExpression?: RegExp;
  disallowExpression?: RegExp;
  disallowIsError?: boolean;
}

/**
 * Envoy behaviour that changed between releases (docs/ext-proc.md, Envoy configuration), so tests can pin the version that
 * runs in production. Build one with `envoyProfile('1.36')`.
 */
export interface EnvoyProfile {
  /** Which HeaderValue field carries header values both ways: `value` before 1.27, `raw_value` since (docs/ext-proc.md, Header values). */
  rawValueMode: 'value' | 'raw';
  /** Before 1.29 a body mutation dropped content-length; since, a mismatching content-length is an error (docs/ext-proc.md, Body rewrites and content-length). */
  contentLengthRules: 'strip-on-mutation' | 'validate';
  /** Local reply status when a message times out with failure_mode_allow off (envoy PR #34856; docs/ext-proc.md, Timeouts and failure modes). */
  timeoutStatus: 500 | 504;
  /** DEFAULT header modes in a mode_override keep the configured mode (≈1.34+; docs/ext-proc.md, Mode override). */
  modeOverrideDefaultIsUnchanged: boolean;
  /** The first message of a stream carries protocol_config (≈1.34+; docs/ext-proc.md, Message order). */
  protocolConfigFirstMessage: boolean;
  /** A spurious answer fails closed when failure_mode_allow is off (≈1.35+; docs/ext-proc.md, Timeouts and failure modes). */
  spuriousFailsClosed: boolean;
  /** A BUFFERED body over the limit while its headers call is outstanding is refused, not stalled (≈1.35+; docs/ext-proc.md, Buffer limits). */
  buffered413WhileWaiting: boolean;
  /** `status_on_error` is honoured (≈1.36+); before, ext_proc errors were always 500 (docs/ext-proc.md, Timeouts and failure modes). */
  statusOnErrorSupported: boolean;
  /** immediate_response headers go through the filter's mutation_rules rather than a permissive set (docs/ext-proc.md, Immediate responses). */
  immediateResponseUsesFilterMutationRules: boolean;
  /**
   * Runtime guard `envoy.reloadable_features.skip_ext_proc_on_local_reply` (on since 1.34): a local reply
   * (router 503/504, the 413 of an oversized body) ends processing, so no response phase reaches the server.
   */
  skipExtProcOnLocalReply: boolean;
}

/** The ext_proc filter settings the gateway plays (docs/ext-proc.md, Envoy configuration). */
export interface FilterConfig {
  /** Proto semantics: an absent field is 0 (DEFAULT for headers and trailers, NONE for bodies). */
  processingMode: ProcessingMode;
  failureModeAllow: boolean;
  messageTimeoutMs: number;
  /** 0 disables override_message_timeout (docs/ext-proc.md, Timeouts and failure modes). */
  maxMessageTimeoutMs: number;
  allowModeOverride: boolean;
  /** Empty: any override is accepted; otherwise the resulting mode must equal one entry (docs/ext-proc.md, Mode override). */
  allowedOverrideModes: ProcessingMode[];
  mutationRules: MutationRules;
  disableImmediateResponse: boolean;
  /** Any HTTP status; one outside 400-599 is answered as 500, as Envoy's toErrorCode does. */
  statusOnError: number;
  /** per_connection_buffer_limit_bytes: the most a BUFFERED body may hold (docs/ext-proc.md, Timeouts and failure modes). */
  bufferLimitBytes: number;
  envoy: EnvoyProfile;
}

/** Derives the switches from an Envoy release such as "1.36" (docs/ext-proc.md, Envoy configuration). */
export function envoyProfile(version: string): EnvoyProfile {
  const minor = Number(/^1\.(\d+)/.exec(version)?.[1]);
  if (!Number.isInteger(minor)) throw new Error(`unknown Envoy version "${version}", expected 1.<minor>`);
  return {
    rawValueMode: minor >= 27 ? 'raw' : 'value',
    contentLengthRules: minor >= 29 ? 'validate' : 'strip-on-mutation',
    timeoutStatus: minor >= 31 ? 504 : 500,
    modeOverrideDefaultIsUnchanged: minor >= 34,
    protocolConfigFirstMessage: minor >= 34,
    spuriousFailsClosed: minor >= 35,
    buffered413WhileWaiting: minor >= 35,
    statusOnErrorSupported: minor >= 36,
    immediateResponseUsesFilterMutationRules: minor >= 27,
    skipExtProcOnLocalReply: minor >= 34,
  };
}

/** The Envoy release production pins. */
export const PRODUCTION_ENVOY_VERSION = '1.36';

/** Mirrors the ext_proc filter of the production envoy.yaml (docs/ext-proc.md, Envoy configuration) with a 16 MiB listener buffer. */
export function productionFilterConfig(): FilterConfig {
  return {
    processingMode: {
      request_header_mode: HeaderSendMode.SEND,
      request_body_mode: BodySendMode.BUFFERED,
      request_trailer_mode: HeaderSendMode.SKIP,
      response_header_mode: HeaderSendMode.SEND,
      response_body_mode: BodySendMode.BUFFERED,
      response_trailer_mode: HeaderSendMode.SKIP,
    },
    failureModeAllow: true,
    messageTimeoutMs: 1000,
    maxMessageTimeoutMs: 5000,
    allowModeOverride: true,
    allowedOverrideModes: [],
    mutationRules: {},
    disableImmediateResponse: false,
    statusOnError: 500,
    bufferLimitBytes: 16 * 1024 * 1024,
    envoy: envoyProfile(PRODUCTION_ENVOY_VERSION),
  };
}

const EMULATED_BODY_MODES: readonly number[] = [BodySendMode.NONE, BodySendMode.BUFFERED];

/** Production defaults overlaid with `overrides`; refuses settings the gateway cannot play faithfully. */
export function resolveFilterConfig(overrides: Partial<FilterConfig> = {}): FilterConfig {
  const config = { ...productionFilterConfig(), ...overrides };
  for (const mode of [config.processingMode.request_body_mode, config.processingMode.response_body_mode]) {
    if (!isEmulatedBodyMode(mode ?? BodySendMode.NONE)) {
      throw new Error(`the gateway plays only NONE and BUFFERED body modes, not ${bodyModeName(mode ?? 0)}`);
    }
  }
  if (!(config.messageTimeoutMs > 0)) throw new Error('messageTimeoutMs must be positive');
  if (!(config.maxMessageTimeoutMs >= 0)) throw new Error('maxMessageTimeoutMs must not be negative');
  if (!(config.bufferLimitBytes > 0)) throw new Error('bufferLimitBytes must be positive');
  if (!Number.isInteger(config.statusOnError) || config.statusOnError < 100 || config.statusOnError > 599) {
    throw new Error('statusOnError must be an HTTP status from 100 to 599');
  }
  return config;
}

function isEmulatedBodyMode(mode: number): boolean {
  return EMULATED_BODY_MODES.includes(mode);
}

export function bodyModeName(mode: number): string {
  return Object.entries(BodySendMode).find(([, value]) => value === mode)?.[0] ?? String(mode);
}
