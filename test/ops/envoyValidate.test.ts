import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * Every Envoy configuration the repository ships passes the offline validator of Envoy 1.36
 * (../shared/tools/envoy-validate, beside the clone in CI) with no error and no warning. Skipped,
 * with the reason, where the validator or kubectl is not there.
 */

const ROOT = join(import.meta.dirname, '../..');
const VALIDATOR_PATH = join(ROOT, '../shared/tools/envoy-validate/envoy-validate');
const VALIDATOR = existsSync(VALIDATOR_PATH) ? VALIDATOR_PATH : undefined;
if (!VALIDATOR) console.warn('test/ops/envoyValidate.test.ts skipped: ../shared/tools/envoy-validate is not beside the repository');
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const kubectlMissing = kubectl.error !== undefined || kubectl.status !== 0;
if (VALIDATOR && kubectlMissing) console.warn('test/ops/envoyValidate.test.ts: kubectl is not installed; the rendered kustomize install is not validated');

const scratch = mkdtempSync(join(tmpdir(), 'envoy-validate-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function validate(files: string[]): { status: number | null; output: string } {
  const run = spawnSync(VALIDATOR!, files, { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe.skipIf(!VALIDATOR)('envoy-validate (Envoy 1.36)', () => {
  it('passes deploy/sidecar/envoy.yaml and docker-compose.yml with 0 errors and 0 warnings', () => {
    const result = validate(['deploy/sidecar/envoy.yaml', 'docker-compose.yml']);
    expect(result.output).toContain('envoy-validate: 0 error(s), 0 warning(s)');
    expect(result.status, result.output).toBe(0);
  }, 60_000);

  it.skipIf(kubectlMissing)('passes the Envoy config embedded in the rendered kustomize install', () => {
    const rendered = join(scratch, 'deploy.yaml');
    writeFileSync(rendered, execFileSync('kubectl', ['kustomize', join(ROOT, 'deploy')], { encoding: 'utf8' }));
    const result = validate([rendered]);
    expect(result.output).toMatch(/ConfigMap svc-cache-envoy-[a-z0-9]+ data\["envoy.yaml"\]: 0 error\(s\), 0 warning\(s\)/);
    expect(result.output).toMatch(/Deployment todo-api container envoy .* reads ConfigMap svc-cache-envoy/);
    expect(result.status, result.output).toBe(0);
  }, 60_000);
});
