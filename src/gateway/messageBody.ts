import type { Readable, Writable } from 'node:stream';

/**
 * How the filter manager holds body data a filter is not ready to pass on: `buffer` counts it against the
 * buffer limit (a BUFFERED filter returned StopIterationAndBuffer, so overflowing is an error), `watermark`
 * just stops reading once the limit is reached (StopIterationAndWatermark).
 */
export type HoldMode = 'buffer' | 'watermark';

/**
 * The body of one HTTP message (request from the client, or response from the origin or a local reply) as
 * Envoy's filter manager carries it: read as it arrives, held while a filter decides, then either passed on
 * whole or streamed through.
 */
export class MessageBody {
  private chunks: Buffer[];
  private length: number;
  private hold: HoldMode = 'watermark';
  private overflowed = false;
  private failed = false;
  private discarding = false;
  private sink: Writable | undefined;
  private onSinkEnded: () => void = () => undefined;
  private waiters: ((body: Buffer | undefined) => void)[] = [];
  /** Whether trailers ended the message rather than its last data (known once the body is complete). */
  private trailersFollow: () => boolean = () => false;

  private constructor(
    private readonly source: Readable | undefined,
    private present: boolean,
    private ended: boolean,
    initial: Buffer[],
    private readonly limitBytes: number,
    private readonly onOverflow: () => void,
  ) {
    this.chunks = initial;
    this.length = initial.reduce((total, chunk) => total + chunk.length, 0);
  }

  /** A headers-only message: its headers carry end_of_stream. */
  static absent(): MessageBody {
    return new MessageBody(undefined, false, true, [], Infinity, () => undefined);
  }

  /** A body that is all there already (a local reply's). */
  static fixed(bytes: Buffer): MessageBody {
    return new MessageBody(undefined, true, true, [bytes], Infinity, () => undefined);
  }

  /**
   * Reads `source` from now on; `onOverflow` runs once if held data in `buffer` mode passes `limitBytes`.
   * `hasTrailers` tells, once `source` has ended, whether trailers came after the data.
   */
  static reading(
    source: Readable,
    limitBytes: number,
    onOverflow: () => void,
    hasTrailers: () => boolean = () => false,
  ): MessageBody {
    const body = new MessageBody(source, true, false, [], limitBytes, onOverflow);
    body.trailersFollow = hasTrailers;
    source.on('data', (chunk: Buffer) => body.onData(chunk));
    source.on('end', () => body.onEnd());
    source.on('error', () => body.onFailure());
    source.on('close', () => {
      if (!body.ended) body.onFailure();
    });
    return body;
  }

  get isAbsent(): boolean {
    return !this.present;
  }

  get endsWithTrailers(): boolean {
    return this.ended && this.trailersFollow();
  }

  get exceedsLimit(): boolean {
    return this.length > this.limitBytes;
  }

  setHold(mode: HoldMode): void {
    this.hold = mode;
    if (mode === 'buffer' && !this.enforceLimit()) this.source?.resume();
  }

  /** The whole body once it has arrived; undefined if it overflowed the limit or the sender gave up. */
  complete(): Promise<Buffer | undefined> {
    if (this.overflowed || this.failed) return Promise.resolve(undefined);
    if (this.ended) return Promise.resolve(this.heldBytes());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** What has arrived and is held so far (all of it once the body is complete). */
  heldBytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /**
   * Sets the content (a body mutation); data still arriving from the sender is read and dropped. A held
   * buffer is Envoy's watermark buffer: a mutation that takes it over the limit fires the same overflow as
   * data arriving would (docs/ext-proc.md, Buffer limits).
   */
  replace(bytes: Buffer): void {
    this.chunks = [bytes];
    this.length = bytes.length;
    this.present = true;
    if (!this.ended) {
      this.discarding = true;
      this.source?.resume();
    }
    if (this.hold === 'buffer' && this.exceedsLimit && !this.overflowed) {
      this.overflowed = true;
      this.onOverflow();
    }
  }

  /**
   * Passes the body on: what is held now, then the rest as it arrives; ends `sink` when the body ends and
   * then calls `onEnd`.
   */
  pipeTo(sink: Writable, onEnd: () => void = () => undefined): void {
    this.sink = sink;
    this.onSinkEnded = onEnd;
    for (const chunk of this.chunks) sink.write(chunk);
    this.chunks = [];
    if (this.ended) this.endSink();
    else this.source?.resume();
  }

  /** Nobody needs the rest of the body; keep reading so the connection is not stalled. */
  discard(): void {
    this.discarding = true;
    this.chunks = [];
    this.settle(undefined);
    this.source?.resume();
  }

  private onData(chunk: Buffer): void {
    if (this.discarding) return;
    if (this.sink) {
      if (!this.sink.write(chunk)) {
        this.source?.pause();
        this.sink.once('drain', () => this.source?.resume());
      }
      return;
    }
    this.chunks.push(chunk);
    this.length += chunk.length;
    this.enforceLimit();
  }

  private onEnd(): void {
    this.ended = true;
    if (this.sink) this.endSink();
    else if (!this.discarding) this.settle(this.heldBytes());
  }

  private endSink(): void {
    this.sink?.end();
    this.onSinkEnded();
  }

  private onFailure(): void {
    if (this.ended) return;
    this.failed = true;
    this.settle(undefined);
  }

  /** True when the held data is over the limit (reading is then paused). */
  private enforceLimit(): boolean {
    if (!this.exceedsLimit) return false;
    this.source?.pause();
    if (this.hold === 'buffer' && !this.overflowed) {
      this.overflowed = true;
      this.settle(undefined);
      this.onOverflow();
    }
    return true;
  }

  private settle(body: Buffer | undefined): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter(body);
  }
}
