import type { Logger } from '../observability/index.js';

/**
 * Shutdown on SIGTERM (Kubernetes, `npm start` stopped by a process manager) and SIGINT (a
 * terminal). Installed before anything starts listening, so that a signal arriving while the
 * servers start is never Node's default (an immediate exit that leaves nothing drained): it is
 * remembered, and the shutdown runs as soon as `closeWith` names what to close.
 */
export interface ShutdownSignals {
  /** What closes everything that was started; a signal already received runs it at once. */
  closeWith(close: () => Promise<void>): void;
}

export function handleShutdownSignals(logger: Logger, overrunMs: number): ShutdownSignals {
  let close: (() => Promise<void>) | undefined;
  let signalled: string | undefined;
  const shutDown = (signal: string, run: () => Promise<void>): void => {
    logger.info({ signal }, 'shutting down');
    // `close` has its own grace period; should it hang past that, exit 1 rather than wait for SIGKILL.
    setTimeout(() => {
      logger.error({ afterMs: overrunMs }, 'shutdown did not finish; exiting');
      process.exit(1);
    }, overrunMs).unref();
    run().then(
      () => {
        logger.info('shut down cleanly');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: string): void => {
    if (signalled !== undefined) {
      logger.warn({ signal }, 'second signal during shutdown; exiting now');
      process.exit(1);
    }
    signalled = signal;
    if (close) shutDown(signal, close);
    else logger.info({ signal }, 'signal received while starting; shutting down once started');
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  return {
    closeWith: (next) => {
      close = next;
      if (signalled !== undefined) shutDown(signalled, next);
    },
  };
}
