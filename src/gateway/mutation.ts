import type { BodyMutation, HeaderMutation } from '../extproc/index.js';
import type { EnvoyProfile, MutationRules } from './filterConfig.js';
import { headerValueFromMessage, type HeaderMap } from './headerMap.js';

type CheckOperation = 'set' | 'append' | 'remove';
type CheckResult = 'ok' | 'ignore' | 'fail';

/** Envoy's limits on a header map (HCM defaults max_headers_count 100, max_request_headers_kb 60). */
const MAX_HEADER_COUNT = 100;
const MAX_HEADER_BYTES = 60 * 1024;

const ROUTING_HEADERS = new Set(['host', ':authority', ':method', ':scheme']);
const ENVOY_HEADER_PREFIX = 'x-envoy';
/** RFC 9110 token characters: what Envoy accepts in a non-pseudo header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PSEUDO_HEADER_NAME = /^:[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const INVALID_VALUE_CHARACTER = /[\0\r\n]/;
/** RFC 3986 authority characters, as nghttp2's authority check accepts them. */
const AUTHORITY = /^[A-Za-z0-9\-._~!$&'()*+,;=:@[\]%]+$/;

/** Decides, header by header, whether a mutation may touch it (Envoy's mutation_rules Checker; docs/ext-proc.md, Header mutations). */
export class MutationChecker {
  private readonly allowExpression: RegExp | undefined;
  private readonly disallowExpression: RegExp | undefined;

  constructor(private readonly rules: MutationRules) {
    this.allowExpression = rules.allowExpression && wholeName(rules.allowExpression);
    this.disallowExpression = rules.disallowExpression && wholeName(rules.disallowExpression);
  }

  /** The fixed, permissive rules immediate responses used before they adopted the filter's rules (docs/ext-proc.md, Immediate responses). */
  static permissive(): MutationChecker {
    return new MutationChecker({ allowAllRouting: true, allowEnvoy: true });
  }

  check(operation: CheckOperation, name: string, value: string): CheckResult {
    if (this.isAllowed(operation, name) && (operation === 'remove' || isValidValue(name, value))) return 'ok';
    return this.rules.disallowIsError ? 'fail' : 'ignore';
  }

  private isAllowed(operation: CheckOperation, name: string): boolean {
    if (operation === 'remove' && (name.startsWith(':') || name === 'host')) return false;
    if (this.disallowExpression?.test(name)) return false;
    if (this.allowExpression?.test(name)) return true;
    if (this.rules.disallowAll) return false;
    if (!this.rules.allowAllRouting && ROUTING_HEADERS.has(name)) return false;
    if (name.startsWith(':') && (operation === 'append' || this.rules.disallowSystem)) return false;
    if (!this.rules.allowEnvoy && name.startsWith(ENVOY_HEADER_PREFIX)) return false;
    return true;
  }
}

export interface MutationContext {
  checker: MutationChecker;
  profile: EnvoyProfile;
  /** Counts into `rejected_header_mutations`. */
  onRejected(): void;
}

export interface MutationOptions {
  /** CONTINUE_AND_REPLACE lets `:method` change (docs/ext-proc.md, Header mutations). */
  replacingMessage: boolean;
  /** Body modes where Envoy owns content-length skip any content-length the server sets (docs/ext-proc.md, Body rewrites and content-length). */
  skipContentLength: boolean;
}

/**
 * Applies a HeaderMutation as Envoy's MutationUtils does: removals first, then sets in order, stopping at
 * the first structural error. Returns the error text Envoy puts in %RESPONSE_CODE_DETAILS%, or undefined.
 */
export function applyHeaderMutation(
  mutation: HeaderMutation,
  headers: HeaderMap,
  options: MutationOptions,
  context: MutationContext,
): string | undefined {
  const removals = mutation.remove_headers ?? [];
  const sets = mutation.set_headers ?? [];
  if (removals.length > MAX_HEADER_COUNT || sets.length > MAX_HEADER_COUNT) {
    context.onRejected();
    return (
      `Header mutation remove header count ${removals.length} or set header count ${sets.length} ` +
      `exceed the HCM header countlimit ${MAX_HEADER_COUNT}`
    );
  }

  for (const rawName of removals) {
    if (!isValidName(rawName)) {
      context.onRejected();
      return 'Invalid character in remove_headers mutation.';
    }
    const name = rawName.toLowerCase();
    const result = context.checker.check('remove', name, '');
    if (result === 'ok') {
      headers.remove(name);
    } else {
      context.onRejected();
      if (result === 'fail') return `Invalid attempt to remove ${name}`;
    }
  }

  for (const option of sets) {
    const header = option.header;
    if (!header) continue;
    // proto3 leaves an unset key out of the decoded message; Envoy sees the empty string.
    const key = header.key ?? '';
    if (options.skipContentLength && key.toLowerCase() === 'content-length') continue;
    // With both value and raw_value set, 1.36 reads raw_value and ignores value (docs/ext-proc.md, Header values).
    const value = headerValueFromMessage(header, context.profile);
    if (!isValidName(key) || INVALID_VALUE_CHARACTER.test(value)) {
      context.onRejected();
      return 'Invalid character in set_headers mutation.';
    }
    const name = key.toLowerCase();
    // Only the deprecated `append` BoolValue counts, absent meaning overwrite; append_action is ignored (docs/ext-proc.md, Header values).
    const append = option.append?.value === true;
    const operation: CheckOperation = append && headers.has(name) ? 'append' : 'set';
    const result =
      options.replacingMessage && name === ':method' ? 'ok' : context.checker.check(operation, name, value);
    if (result === 'ok') {
      if (append) headers.add(name, value);
      else headers.set(name, value);
    } else {
      context.onRejected();
      if (result === 'fail') return `Invalid attempt to modify ${name}`;
    }
  }

  if (headers.size > MAX_HEADER_COUNT || headers.byteSize() > MAX_HEADER_BYTES) {
    context.onRejected();
    return (
      `Header mutation causes end result header count ${headers.size} or header size ${headers.byteSize()} ` +
      `bytes, exceeding the count limit ${MAX_HEADER_COUNT} or the size limit ${MAX_HEADER_BYTES / 1024} kilobytes`
    );
  }
  return undefined;
}

/** The body after a BodyMutation: `body` replaces, `clear_body: true` empties, anything else leaves it. */
export function applyBodyMutation(mutation: BodyMutation, body: Buffer): Buffer {
  if (mutation.mutation === 'body') return mutation.body ?? Buffer.alloc(0);
  if (mutation.mutation === 'clear_body' && mutation.clear_body) return Buffer.alloc(0);
  return body;
}

/** The length Envoy compares content-length with: the `body` field only, so clear_body counts as 0 (docs/ext-proc.md, Body rewrites and content-length). */
export function mutatedBodyLength(mutation: BodyMutation): number {
  return mutation.body?.length ?? 0;
}

function isValidName(name: string): boolean {
  return name.startsWith(':') ? PSEUDO_HEADER_NAME.test(name) : TOKEN.test(name);
}

/** Values Envoy refuses even where the name is allowed, because they would break routing or framing. */
function isValidValue(name: string, value: string): boolean {
  if (!name.startsWith(':') && INVALID_VALUE_CHARACTER.test(value)) return false;
  if ((name === 'host' || name === ':authority') && !AUTHORITY.test(value)) return false;
  if (name === ':scheme' && !/^https?$/i.test(value)) return false;
  if (name === ':status') {
    if (!/^\d+$/.test(value)) return false;
    if (Number(value) < 200) return false;
  }
  return true;
}

function wholeName(expression: RegExp): RegExp {
  return new RegExp(`^(?:${expression.source})$`, expression.flags.replace(/[gy]/g, ''));
}
