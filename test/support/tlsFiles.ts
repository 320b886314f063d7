import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Certificates for `grpc.tls`, made at test time with the openssl command: a CA, a server
 * certificate for localhost and a client certificate, both signed by it. Where openssl is missing
 * the tests that need them are skipped and say so.
 */

export const opensslMissing = ((): boolean => {
  const openssl = spawnSync('openssl', ['version'], { encoding: 'utf8' });
  return openssl.error !== undefined || openssl.status !== 0;
})();

/** Writes ca.crt/ca.key, server.crt/server.key and client.crt/client.key into `dir`. */
export function makeTlsFiles(dir: string): void {
  const run = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const key = (name: string): void => run('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', name);
  const signed = (name: string, subject: string, extensions: string): void => {
    key(`${name}.key`);
    run('req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), extensions);
    run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`);
  };
  key('ca.key');
  run('req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=svc-cache test CA', '-days', '1', '-out', 'ca.crt');
  signed('server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed('client', '/CN=envoy', 'extendedKeyUsage=clientAuth\n');
}
