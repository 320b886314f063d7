import type * as grpc from '@grpc/grpc-js';
import type * as http2 from 'node:http2';
import { types } from 'node:util';

/** Why a server's sessions keep Node's own stream map: a grpc-js or a Node that changed shape. */
export type StreamTableRefusal = 'no-http2-servers' | 'unknown-session-shape';

/**
 * Every HTTP/2 session of a bound grpc-js server, those it has accepted and those it accepts from
 * now on, keeps its open streams in a StreamTable. grpc-js does not expose its HTTP/2 servers or
 * their sessions, so they are found under the field it keeps them in. `onRefused` is called once if
 * the server has no HTTP/2 servers there, and once for the first session whose internals differ;
 * such sessions keep Node's `Map` and serve as before, with the garbage collection cost it brings.
 */
export function adoptStreamTables(server: grpc.Server, onRefused: (reason: StreamTableRefusal) => void): void {
  const http2Servers: unknown = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!types.isMap(http2Servers) || http2Servers.size === 0) {
    onRefused('no-http2-servers');
    return;
  }
  let refusedSession = false;
  const adopt = (session: http2.Http2Session): void => {
    if (adoptStreamTable(session) || refusedSession) return;
    refusedSession = true;
    onRefused('unknown-session-shape');
  };
  for (const [http2Server, entry] of http2Servers as Map<http2.Http2Server, unknown>) {
    // grpc-js makes the bindAsync callback before Node polls for connections, so this set is empty
    // when the caller adopts at once; a later caller finds the sessions accepted before it here.
    for (const session of sessionsTrackedIn(entry)) adopt(session);
    http2Server.on('session', adopt);
  }
}

/**
 * Gives an HTTP/2 server session a table of its open streams that does not keep finished streams in
 * the heap. Node's session keeps them in a `Map`, set when a stream opens and deleted when it
 * closes; V8 replaces a `Map`'s hash table as deletions fill it and links the obsolete table to its
 * successor, so once a full collection has moved the current table to the old generation, every
 * later table, and every stream any of them held, survives the young collections until the next
 * full one (docs/performance.md, Garbage collection). This table keeps its slots in arrays that are
 * written in place, so a finished stream is unreachable as soon as it is deleted.
 *
 * Returns false, leaving the session as it is, when its internals are not the ones this was written
 * against (Node 20 to 24: a `Map` under the `state` symbol's `streams`, used through get, set,
 * delete, size and forEach).
 */
export function adoptStreamTable(session: http2.Http2Session): boolean {
  const state = sessionState(session);
  // Node's `SafeMap` is a `Map` to V8 but not an instance of the global `Map` class.
  if (state === undefined || !types.isMap(state.streams)) return false;
  const table = new StreamTable<unknown>();
  for (const [id, stream] of Map.prototype.entries.call(state.streams as Map<unknown, unknown>)) {
    if (!isStreamId(id)) return false;
    table.set(id, stream);
  }
  state.streams = table;
  return true;
}

/**
 * An open-addressing hash table from HTTP/2 stream identifier to stream, with the part of `Map`'s
 * interface Node's session uses. Linear probing with backward-shift deletion leaves no tombstones,
 * so the arrays are replaced only to grow, when the streams would fill more than half the slots,
 * or to shrink, when they fill less than an eighth of them.
 */
export class StreamTable<V> {
  /** A power of two long, as `values` is. */
  private ids = new Uint32Array(MIN_CAPACITY);
  private values = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(id: number): V | undefined {
    const slot = this.find(id);
    return slot === -1 ? undefined : this.values[slot];
  }

  set(id: number, value: V): this {
    if (!isStreamId(id)) throw new RangeError(`not an HTTP/2 stream identifier: ${id}`);
    const existing = this.find(id);
    if (existing !== -1) {
      this.values[existing] = value;
      return this;
    }
    if ((this.count + 1) * 2 > this.ids.length) this.resize(this.ids.length * 2);
    this.insert(id, value);
    return this;
  }

  delete(id: number): boolean {
    const slot = this.find(id);
    if (slot === -1) return false;
    this.removeAt(slot);
    if (this.ids.length > MIN_CAPACITY && this.count * 8 < this.ids.length) this.resize(this.ids.length / 2);
    return true;
  }

  /** Visits the values present when it starts and still present when their turn comes, as `Map` does for deletions. */
  forEach(visit: (value: V, id: number, table: this) => void): void {
    const entries: [number, V][] = [];
    for (let slot = 0; slot < this.ids.length; slot += 1) {
      if (this.ids[slot] !== EMPTY) entries.push([this.ids[slot]!, this.values[slot]!]);
    }
    for (const [id, value] of entries) {
      if (this.get(id) === value) visit(value, id, this);
    }
  }

  private find(id: number): number {
    // Node asks for stream 0 when a frame of the connection itself fails.
    if (id === EMPTY) return -1;
    const mask = this.ids.length - 1;
    for (let slot = homeSlot(id, mask); ; slot = (slot + 1) & mask) {
      const present = this.ids[slot];
      if (present === id) return slot;
      if (present === EMPTY) return -1;
    }
  }

  private insert(id: number, value: V): void {
    const mask = this.ids.length - 1;
    let slot = homeSlot(id, mask);
    while (this.ids[slot] !== EMPTY) slot = (slot + 1) & mask;
    this.ids[slot] = id;
    this.values[slot] = value;
    this.count += 1;
  }

  /** Backward-shift deletion: moves later entries of the probe run into the gap, so no slot is a tombstone. */
  private removeAt(slot: number): void {
    const mask = this.ids.length - 1;
    let gap = slot;
    for (let next = (gap + 1) & mask; this.ids[next] !== EMPTY; next = (next + 1) & mask) {
      const home = homeSlot(this.ids[next]!, mask);
      // The entry at `next` may fill the gap unless its home lies cyclically in (gap, next].
      const homeAfterGap = gap <= next ? gap < home && home <= next : gap < home || home <= next;
      if (homeAfterGap) continue;
      this.ids[gap] = this.ids[next]!;
      this.values[gap] = this.values[next];
      gap = next;
    }
    this.ids[gap] = EMPTY;
    this.values[gap] = undefined;
    this.count -= 1;
  }

  private resize(capacity: number): void {
    const { ids, values } = this;
    this.ids = new Uint32Array(capacity);
    this.values = new Array<V | undefined>(capacity).fill(undefined);
    this.count = 0;
    for (let slot = 0; slot < ids.length; slot += 1) {
      if (ids[slot] !== EMPTY) this.insert(ids[slot]!, values[slot]!);
    }
  }
}

/** Stream identifiers are 31-bit and never 0 (RFC 9113, section 5.1.1), so 0 marks an empty slot. */
const EMPTY = 0;
const MIN_CAPACITY = 64;

function isStreamId(id: unknown): id is number {
  return typeof id === 'number' && Number.isInteger(id) && id > 0 && id <= 0x7fffffff;
}

/** A client's stream identifiers are consecutive odd numbers: dropping the low bit spreads them over consecutive slots. */
function homeSlot(id: number, mask: number): number {
  return (id >>> 1) & mask;
}

function sessionsTrackedIn(entry: unknown): Iterable<http2.Http2Session> {
  const sessions: unknown = typeof entry === 'object' && entry !== null ? (entry as { sessions?: unknown }).sessions : undefined;
  return types.isSet(sessions) ? (sessions as Set<http2.Http2Session>) : [];
}

function sessionState(session: http2.Http2Session): { streams: unknown } | undefined {
  const symbol = Object.getOwnPropertySymbols(session).find((candidate) => candidate.description === 'state');
  if (symbol === undefined) return undefined;
  const state: unknown = (session as unknown as Record<symbol, unknown>)[symbol];
  return typeof state === 'object' && state !== null && 'streams' in state ? (state as { streams: unknown }) : undefined;
}
