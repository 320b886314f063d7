import { format } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../observability/index.js';

/**
 * grpc-js writes its own messages as plain lines on stderr (`E No address added out of total 1
 * resolved`, before the error it also throws); they go to svc-cache's JSON log instead, at their
 * level and with `component: "grpc-js"`, so that every line the sidecar prints carries fields
 * (README, Logs). Which of them are written still follows grpc-js's GRPC_VERBOSITY (ERROR unless
 * set). Process-wide, so the process's entry calls it, not startSidecar.
 */
export function routeGrpcLogs(logger: Logger): void {
  const grpcLogger = logger.child({ component: 'grpc-js' });
  grpc.setLogger({
    error: (...args: unknown[]) => grpcLogger.error(format(...args)),
    info: (...args: unknown[]) => grpcLogger.info(format(...args)),
    debug: (...args: unknown[]) => grpcLogger.debug(format(...args)),
  });
}
