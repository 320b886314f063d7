import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm start` stopped with SIGTERM to the npm process, as a process manager or CI does it (not the
 * terminal's Ctrl-C, which signals the whole process group): npm forwards the signal to its script,
 * whose shell has `exec`ed the demo, so the demo itself receives it and closes every port. Before,
 * the shell died and the demo was orphaned, keeping its ports.
 */

const ROOT = join(import.meta.dirname, '../..');

function portRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('npm start', () => {
  it('leaves nothing listening once npm gets SIGTERM', async () => {
    const npm = spawn('npm', ['start', '--', '--port', '0', '--origin-port', '0', '--admin-port', '0'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    const up = new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        output += chunk.toString('utf8');
        if (/Try it twice/.test(output)) resolve(output);
      };
      npm.stdout!.on('data', onData);
      npm.stderr!.on('data', onData);
      void exited.then((code) => reject(new Error(`npm start exited (${code}) before the demo was up:\n${output}`)));
    });
    try {
      const banner = await up;
      const ports = [
        /GraphQL through the cache +http:\/\/127\.0\.0\.1:(\d+)/,
        /demo origin \(Todo API\) +http:\/\/127\.0\.0\.1:(\d+)/,
        /ext_proc \(the sidecar\) +127\.0\.0\.1:(\d+)/,
        /health +http:\/\/127\.0\.0\.1:(\d+)\/healthz/,
      ].map((pattern) => Number(pattern.exec(banner)?.[1]));
      expect(ports.every((port) => port > 0), banner).toBe(true);
      // The admin pages the banner names answer at the addresses it prints.
      const dashboard = /dashboard +(http:\/\/\S+)/.exec(banner)?.[1];
      const metrics = /metrics \(Prometheus\) +(http:\/\/\S+)/.exec(banner)?.[1];
      expect(dashboard, banner).toBe(`http://127.0.0.1:${ports[3]}/`);
      expect(metrics, banner).toBe(`http://127.0.0.1:${ports[3]}/metrics`);
      const [page, scrape] = await Promise.all([fetch(dashboard!), fetch(metrics!)]);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
      expect([scrape.status, (await scrape.text()).includes('svc_cache_requests_total')]).toEqual([200, true]);
      for (const port of ports) expect(await portRefused(port), `port ${port} open while the demo runs`).toBe(false);

      npm.kill('SIGTERM');
      await exited;
      expect(output).toContain('shut down cleanly');
      for (const port of ports) expect(await portRefused(port), `port ${port} still open after npm exited`).toBe(true);
    } finally {
      npm.kill('SIGKILL');
    }
  }, 120_000);
});
