import { randomUUID } from 'node:crypto';
import type { HeaderMap } from './headerMap.js';

/** The HTTP connection manager settings that decide who the client is (same names as Envoy's fields). */
export interface ConnectionManagerConfig {
  /** `use_remote_address`: the peer of the connection is the client, and is appended to x-forwarded-for. */
  useRemoteAddress: boolean;
  /** `xff_num_trusted_hops`: how many proxies in front of this one are trusted to have set x-forwarded-for. */
  xffNumTrustedHops: number;
}

/** What production runs: envoy/envoy.yaml is the edge proxy (docs/ext-proc.md, Envoy configuration). */
export const PRODUCTION_CONNECTION_MANAGER: ConnectionManagerConfig = { useRemoteAddress: true, xffNumTrustedHops: 0 };

export interface ConnectionAddresses {
  /** The peer of the downstream connection. */
  remote: string;
  /** This proxy's own address on that connection. */
  local: string;
}

/**
 * Envoy's ConnectionManagerUtility::mutateRequestHeaders for a listener without internal_address_config
 * (since 1.36 no address is internal then, so every request is external): x-forwarded-for, x-forwarded-proto,
 * the cleaning of Envoy's control headers, x-envoy-external-address and x-request-id.
 */
export function mutateRequestHeaders(
  headers: HeaderMap,
  addresses: ConnectionAddresses,
  config: ConnectionManagerConfig,
): void {
  const remote = plainAddress(addresses.remote);
  let trustedClient: string | undefined;
  if (config.useRemoteAddress) {
    if (config.xffNumTrustedHops > 0) trustedClient = addressFromXff(headers, config.xffNumTrustedHops - 1);
    trustedClient ??= remote;
    // A loopback peer is recorded as this proxy's own address.
    appendXff(headers, isLoopback(remote) ? plainAddress(addresses.local) : remote);
    // An untrusted peer's x-forwarded-proto is overwritten.
    if (config.xffNumTrustedHops === 0) headers.set('x-forwarded-proto', 'http');
  }
  if (!headers.has('x-forwarded-proto')) headers.set('x-forwarded-proto', 'http');

  const edgeRequest = config.useRemoteAddress;
  cleanInternalHeaders(headers, edgeRequest);
  if (edgeRequest && trustedClient !== undefined) headers.set('x-envoy-external-address', trustedClient);
  // Edge requests always get a fresh id (preserve_external_request_id is off); others keep a non-empty one.
  if (edgeRequest || (headers.get('x-request-id') ?? '') === '') headers.set('x-request-id', randomUUID());
}

/** ConnectionManagerUtility::cleanInternalHeaders: what a client that is not internal may not set. */
function cleanInternalHeaders(headers: HeaderMap, edgeRequest: boolean): void {
  headers.remove('x-envoy-internal');
  if (edgeRequest) for (const name of EDGE_ONLY_CLEANED_HEADERS) headers.remove(name);
  for (const name of ROUTER_CONTROL_HEADERS) headers.remove(name);
}

const EDGE_ONLY_CLEANED_HEADERS = [
  'x-envoy-decorator-operation',
  'x-envoy-downstream-service-cluster',
  'x-envoy-downstream-service-node',
];

/** Headers that steer Envoy's router; never taken from a client that is not internal. */
const ROUTER_CONTROL_HEADERS = [
  'x-envoy-retriable-status-codes',
  'x-envoy-retriable-header-names',
  'x-envoy-retry-on',
  'x-envoy-retry-grpc-on',
  'x-envoy-max-retries',
  'x-envoy-upstream-alt-stat-name',
  'x-envoy-upstream-rq-timeout-ms',
  'x-envoy-upstream-rq-per-try-timeout-ms',
  'x-envoy-upstream-rq-timeout-alt-response',
  'x-envoy-expected-rq-timeout-ms',
  'x-envoy-force-trace',
  'x-envoy-ip-tags',
  'x-envoy-original-url',
  'x-envoy-hedge-on-per-try-timeout',
];

function appendXff(headers: HeaderMap, address: string): void {
  const current = headers.get('x-forwarded-for');
  headers.set('x-forwarded-for', current === undefined || current === '' ? address : `${current},${address}`);
}

/** Utility::getLastAddressFromXFF: the address `skip` entries from the right, if it is an IP address. */
function addressFromXff(headers: HeaderMap, skip: number): string | undefined {
  const entries = (headers.get('x-forwarded-for') ?? '').split(',').map((entry) => entry.trim());
  const entry = entries.length > skip ? entries[entries.length - 1 - skip] : undefined;
  return entry !== undefined && isIpAddress(entry) ? entry : undefined;
}

function isIpAddress(text: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(text) || (text.includes(':') && /^[0-9a-fA-F:.]+$/.test(text));
}

function plainAddress(address: string): string {
  return address.replace(/^::ffff:/, '');
}

function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.');
}
