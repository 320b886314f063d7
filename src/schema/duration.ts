/** "250ms", "2s", "1.5s": for log lines. */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Number((ms / 1000).toFixed(1))}s`;
}
