import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/config/index.js';
import { SIDECAR_NODE_FLAGS } from '../../src/sidecar/index.js';
import { localCacheSettings } from '../../src/store/redisConnection.js';

/**
 * The sidecar install as a platform engineer applies it: the kustomize component in deploy/sidecar
 * added to the example app (deploy/examples/app, also what `kubectl apply -k deploy/` installs),
 * rendered by `kubectl kustomize`, every object checked against Kubernetes' own schemas
 * (kubernetes-models), then read for what svc-cache needs. Skipped, with the reason, where kubectl
 * is not installed.
 */

const ROOT = join(import.meta.dirname, '../..');
const SECRETS_ENV = {
  SVC_PURGE_TOKEN: 'purge-token-for-tests',
  SVC_SCOPE_KEY_SECRET: 'scope-key-secret-for-tests',
  SVC_REDIS_URL: 'redis://:password-for-tests@svc-cache-redis:6379',
};
const SIDECAR_LABEL = { 'svc-cache.dev/sidecar': 'enabled' };
const APP_PORT = 4000;

type Yaml = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const kubectlMissing = kubectl.error || kubectl.status !== 0 ? `kubectl is not installed (${kubectl.error?.message ?? kubectl.stderr})` : undefined;
if (kubectlMissing) console.warn(`test/ops/kustomize.test.ts skipped: ${kubectlMissing}`);

const MODELS: Record<string, new (data: any) => { validate(): void }> = { // eslint-disable-line @typescript-eslint/no-explicit-any
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

function render(directory: string): Yaml[] {
  const text = execFileSync('kubectl', ['kustomize', join(ROOT, directory)], { encoding: 'utf8' });
  return parseAllDocuments(text).map((document) => document.toJS() as Yaml);
}

describe.skipIf(kubectlMissing !== undefined)('the sidecar component added to the example app (kubectl kustomize)', () => {
  const objects = kubectlMissing ? [] : render('deploy/examples/app');
  const find = (kind: string, namePrefix: string): Yaml => {
    const found = objects.find((each) => each.kind === kind && (each.metadata.name as string).startsWith(namePrefix));
    if (!found) throw new Error(`no ${kind} ${namePrefix} rendered`);
    return found;
  };
  const pod = (): Yaml => find('Deployment', 'todo-api').spec.template.spec;
  const container = (name: string): Yaml => pod().containers.find((each: Yaml) => each.name === name);
  const mountedFile = (containerName: string, file: string): string => {
    const mount = container(containerName).volumeMounts.find((each: Yaml) => file.startsWith(`${each.mountPath}/`));
    expect(mount, `a volume mounted over ${file}`).toBeDefined();
    expect(mount.subPath, 'subPath mounts never see ConfigMap updates').toBeUndefined();
    const volume = pod().volumes.find((each: Yaml) => each.name === mount.name);
    const configMap = objects.find((each) => each.kind === 'ConfigMap' && each.metadata.name === volume.configMap.name);
    expect(configMap, `ConfigMap ${volume.configMap.name}`).toBeDefined();
    return configMap!.data[file.slice(mount.mountPath.length + 1)];
  };
  const svcCacheConfig = () => {
    const args = container('svc-cache').args as string[];
    return parseConfig(mountedFile('svc-cache', args[args.indexOf('--config') + 1]!), { source: 'svc-cache-config', env: SECRETS_ENV });
  };

  it('renders only objects that Kubernetes schemas accept', () => {
    expect(objects.map((each) => `${each.kind}/${each.metadata.name}`).length).toBeGreaterThanOrEqual(8);
    for (const object of objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect(Model, `a schema for ${object.apiVersion} ${object.kind}`).toBeDefined();
      expect(() => new Model!(object).validate(), `${object.kind} ${object.metadata.name}`).not.toThrow();
    }
  });

  it('is the same install as `kubectl kustomize deploy/`', () => {
    expect(render('deploy')).toEqual(objects);
  });

  it('adds Envoy 1.36 and svc-cache beside the app, in one pod carrying the sidecar label', () => {
    expect(pod().containers.map((each: Yaml) => each.name).sort()).toEqual(['app', 'envoy', 'svc-cache']);
    expect(container('envoy').image).toBe('envoyproxy/envoy:v1.36-latest');
    expect(container('svc-cache').args.slice(0, 1)).toEqual(['serve']);
    expect(find('Deployment', 'todo-api').spec.template.metadata.labels).toMatchObject(SIDECAR_LABEL);
  });

  it("mounts deploy/sidecar/envoy.yaml, generated into a ConfigMap, where Envoy reads it", () => {
    const command = container('envoy').command as string[];
    expect(mountedFile('envoy', command[command.indexOf('--config-path') + 1]!)).toBe(readFileSync(join(ROOT, 'deploy/sidecar/envoy.yaml'), 'utf8'));
  });

  it('runs one Envoy worker per requested CPU', () => {
    const command = container('envoy').command as string[];
    const concurrency = Number(command[command.indexOf('--concurrency') + 1]);
    const cpu = String(container('envoy').resources.requests.cpu);
    const cores = cpu.endsWith('m') ? Number(cpu.slice(0, -1)) / 1000 : Number(cpu);
    expect(concurrency).toBe(Math.ceil(cores));
  });

  it('gives Envoy memory for its two 16 MiB buffers of each large request at once', () => {
    const limit = String(container('envoy').resources.limits.memory);
    expect(limit).toBe('1Gi');
    const worstCasePerRequest = 2 * 16 * 2 ** 20;
    expect(Math.floor(2 ** 30 / worstCasePerRequest)).toBeGreaterThanOrEqual(30);
  });

  it('points Envoy at the app and the config at it over the pod loopback', () => {
    expect(svcCacheConfig().origin.url).toBe(`http://127.0.0.1:${APP_PORT}/graphql`);
    expect(container('app').ports.map((each: Yaml) => each.containerPort)).toContain(APP_PORT);
  });

  it('moves the Service to Envoy', () => {
    const service = find('Service', 'todo-api');
    expect(service.spec.ports[0].targetPort).toBe('envoy-http');
    expect(container('envoy').ports.find((each: Yaml) => each.name === 'envoy-http').containerPort).toBe(8080);
  });

  it('mounts scopes and rules from a ConfigMap, and takes the purge token, scope key and Redis from Secrets', () => {
    const config = svcCacheConfig();
    expect(Object.keys(config.scopes)).toContain('AUTHENTICATED');
    expect(config.rules.length).toBeGreaterThan(0);
    expect(config.purge.tokens).toEqual([SECRETS_ENV.SVC_PURGE_TOKEN]);
    expect(config.redis?.url).toBe(SECRETS_ENV.SVC_REDIS_URL);
    const env = container('svc-cache').env as Yaml[];
    for (const name of Object.keys(SECRETS_ENV)) {
      const variable = env.find((each) => each.name === name);
      expect(variable?.valueFrom?.secretKeyRef?.name, `${name} from a Secret`).toMatch(/^svc-cache-(secrets|redis)$/);
      expect(variable?.value, `${name} written in the manifest`).toBeUndefined();
    }
    expect(objects.some((each) => each.kind === 'Secret'), 'secret values in the repository').toBe(false);
  });

  it("keeps the image's entry point, whose Node flags size the young generation the memory limit budgets for", () => {
    expect(container('svc-cache').command).toBeUndefined();
    expect(container('svc-cache').env.find((each: Yaml) => each.name === 'NODE_OPTIONS')?.value).toBe('--max-old-space-size=336');
  });

  // The deployment audit: under 512 MiB the heap, the local cache and Node itself left about
  // 10 MiB, less than one 10 MB response in flight.
  it('leaves svc-cache room for several large responses in flight beside its heap, its local cache and Node', () => {
    const quantity = String(container('svc-cache').resources.limits.memory);
    expect(quantity).toMatch(/^\d+Mi$/);
    const limit = Number(quantity.slice(0, -'Mi'.length));
    const oldGeneration = Number(/--max-old-space-size=(\d+)/.exec(container('svc-cache').env.find((each: Yaml) => each.name === 'NODE_OPTIONS').value)![1]);
    const semiSpace = Number(SIDECAR_NODE_FLAGS.find((flag) => flag.startsWith('--max-semi-space-size='))!.split('=')[1]);
    const youngGeneration = 3 * semiSpace;
    const config = svcCacheConfig();
    const localCache = localCacheSettings(config.redis!)!.maxBytes / 2 ** 20;
    const nodeOutsideTheHeap = 56;
    const left = (limit - oldGeneration - youngGeneration - localCache - nodeOutsideTheHeap) * 2 ** 20;
    // Each body in flight is held a few times over outside the heap (README, Resources).
    expect(left).toBeGreaterThanOrEqual(5 * 4 * config.limits.maxResponseBodyBytes);
  });

  it('keeps the ext_proc port on the pod loopback and publishes only Envoy and the admin port', () => {
    const args = container('svc-cache').args as string[];
    expect(args).not.toContain('--grpc-host');
    expect(container('svc-cache').ports.map((each: Yaml) => each.containerPort)).toEqual([9901]);
    const policy = find('NetworkPolicy', 'svc-cache-sidecar-ingress');
    expect(policy.spec.podSelector.matchLabels).toEqual(SIDECAR_LABEL);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    const open = policy.spec.ingress.flatMap((rule: Yaml) => rule.ports.map((port: Yaml) => port.port));
    expect(open.sort()).toEqual([8080, 8081, 9901, 9903]);
  });

  it("declares Envoy's stats port by name for Prometheus, and keeps Envoy's admin off the pod's ports", () => {
    const envoy = parseYaml(mountedFile('envoy', '/etc/envoy/envoy.yaml')) as Yaml;
    const stats = envoy.static_resources.listeners.find((each: Yaml) => each.name === 'stats');
    const port = container('envoy').ports.find((each: Yaml) => each.name === 'envoy-stats');
    expect(port?.containerPort).toBe(stats.address.socket_address.port_value);
    const adminPort = envoy.admin.address.socket_address.port_value as number;
    expect(envoy.admin.address.socket_address.address).toBe('127.0.0.1');
    expect(pod().containers.flatMap((each: Yaml) => (each.ports ?? []).map((declared: Yaml) => declared.containerPort))).not.toContain(adminPort);
    expect(find('NetworkPolicy', 'svc-cache-sidecar-ingress').spec.ingress.flatMap((rule: Yaml) => rule.ports.map((each: Yaml) => each.port))).not.toContain(adminPort);
    // The annotations name svc-cache's port; Envoy's is found by its name (README, Metrics).
    expect(find('Deployment', 'todo-api').spec.template.metadata.annotations['prometheus.io/port']).toBe('9901');
  });

  it('lets only pods with the sidecar reach Redis', () => {
    const policy = find('NetworkPolicy', 'svc-cache-redis');
    expect(policy.spec.podSelector.matchLabels).toEqual(find('Deployment', 'svc-cache-redis').spec.selector.matchLabels);
    expect(policy.spec.ingress).toEqual([{ from: [{ podSelector: { matchLabels: SIDECAR_LABEL } }], ports: [{ port: 6379, protocol: 'TCP' }] }]);
  });

  // The new user's run: the Secret's URL carried a password that the shipped Redis never asked for.
  it("makes the shipped Redis require the password of the Secret whose url svc-cache reads, its probe included", () => {
    const redis = find('Deployment', 'svc-cache-redis').spec.template.spec.containers[0];
    expect(redis.env).toEqual([{ name: 'REDISCLI_AUTH', valueFrom: { secretKeyRef: { name: 'svc-cache-redis', key: 'password' } } }]);
    expect(redis.args.slice(0, 3)).toEqual(['redis-server', '--requirepass', '$(REDISCLI_AUTH)']);
    // The review: plain redis-cli exits 0 on NOAUTH, so the probe passed whatever Redis answered.
    expect(redis.readinessProbe.exec.command).toEqual(['redis-cli', '-e', 'ping']);
    const url = container('svc-cache').env.find((each: Yaml) => each.name === 'SVC_REDIS_URL');
    expect(url.valueFrom.secretKeyRef).toEqual({ name: 'svc-cache-redis', key: 'url' });
  });

  it('keeps pod readiness independent of Redis and the origin schema', () => {
    expect(container('envoy').readinessProbe.httpGet.path).toBe('/ready');
    expect(container('svc-cache').readinessProbe.httpGet).toEqual({ path: '/healthz', port: 'svc-cache-admin' });
    expect(JSON.stringify(pod())).not.toContain('/readyz');
  });

  /** The seconds a container's preStop sleeps: `sleep N`, alone or ending a shell command. */
  const sleepOf = (name: string): number => {
    const command = container(name).lifecycle.preStop.exec.command as string[];
    if (command[0] === 'sleep') return Number(command[1]);
    expect(command.slice(0, 2)).toEqual(['sh', '-c']);
    const seconds = /(?:^|[;&]\s*)sleep (\d+)$/.exec(command[2]!)?.[1];
    expect(seconds, command[2]).toBeDefined();
    return Number(seconds);
  };

  it('lets svc-cache outlive Envoy at termination and drain within the grace period', () => {
    expect(sleepOf('svc-cache')).toBeGreaterThan(sleepOf('envoy'));
    const svcCacheDrainSeconds = 10 + 5;
    expect(pod().terminationGracePeriodSeconds).toBeGreaterThan(sleepOf('svc-cache') + svcCacheDrainSeconds);
  });

  // The deployment audit: the app had no preStop, so it got SIGTERM at once while Envoy kept
  // sending it requests for 10 s, and each MISS and PASS got Envoy's 503 during a rollout.
  it('keeps the app serving until Envoy and svc-cache are gone, with time to exit after', () => {
    expect(container('app').lifecycle.preStop.exec.command).toEqual(['sleep', '15']);
    expect(sleepOf('app')).toBeGreaterThan(sleepOf('envoy'));
    expect(sleepOf('app')).toBeGreaterThan(sleepOf('svc-cache'));
    const appExitSeconds = 10;
    expect(pod().terminationGracePeriodSeconds).toBeGreaterThanOrEqual(sleepOf('app') + appExitSeconds);
  });

  // The deployment audit: a plain `sleep 10` never told keep-alive clients to go; Envoy drains
  // (connection: close, GOAWAY) only once its health check has failed.
  it("fails Envoy's health check on its admin address at the start of termination, with the svc-cache image's busybox wget", () => {
    const envoy = parseYaml(mountedFile('envoy', '/etc/envoy/envoy.yaml')) as Yaml;
    const admin = envoy.admin.address.socket_address as { address: string; port_value: number };
    const command = container('svc-cache').lifecycle.preStop.exec.command as string[];
    expect(command.slice(0, 2)).toEqual(['sh', '-c']);
    // In the background: an Envoy that does not answer must not hold up the sleep.
    expect(command[2]).toBe(`wget -q -O /dev/null --post-data '' http://${admin.address}:${admin.port_value}/healthcheck/fail & sleep ${sleepOf('svc-cache')}`);
    expect(container('envoy').lifecycle.preStop.exec.command).toEqual(['sleep', String(sleepOf('envoy'))]);
    // The kubelet runs the preStop before a liveness restart too, where the pod stays: each start
    // passes Envoy's check again, or the pod would stay out of the Service (second review).
    expect(container('svc-cache').lifecycle.postStart.exec.command).toEqual([
      'sh',
      '-c',
      `wget -q -O /dev/null --post-data '' http://${admin.address}:${admin.port_value}/healthcheck/ok >/dev/null 2>&1 & exit 0`,
    ]);
    // busybox's wget is in the Alpine image svc-cache runs on (Envoy's Ubuntu image has no HTTP client).
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n').filter((line) => line.startsWith('FROM '));
    expect(dockerfile[dockerfile.length - 1]).toMatch(/^FROM node:\d+-alpine$/);
  });

  it('gives every container resources and runs none as root', () => {
    for (const deployment of objects.filter((each) => each.kind === 'Deployment')) {
      const spec = deployment.spec.template.spec;
      for (const each of spec.containers as Yaml[]) {
        const runsAsNonRoot = each.securityContext.runAsNonRoot ?? spec.securityContext?.runAsNonRoot;
        expect(runsAsNonRoot, each.name).toBe(true);
        expect(each.resources.requests, each.name).toHaveProperty('cpu');
        expect(each.resources.limits, each.name).toHaveProperty('memory');
        expect(each.securityContext.allowPrivilegeEscalation, each.name).toBe(false);
      }
    }
  });
});

// README, "Add it to your pod", step 4, built as written there. The deployment audit: the step had
// the overlay replace svc-cache-envoy in its own configMapGenerator, which kustomize 5 refuses.
describe.skipIf(kubectlMissing !== undefined)("an app on another port: the sidecar's Envoy config replaced by a Component of the overlay's", () => {
  const APP_PORT_ELSEWHERE = 5000;
  const scratch = kubectlMissing ? '' : mkdtempSync(join(tmpdir(), 'svc-cache-overlay-'));
  // The component vendored beside the overlays, as step 2 has it.
  if (scratch) cpSync(join(ROOT, 'deploy/sidecar'), join(scratch, 'svc-cache/sidecar'), { recursive: true });
  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const overlay = (name: string, kustomization: string): string => {
    const directory = join(scratch, name);
    mkdirSync(directory, { recursive: true });
    for (const file of ['app.yaml', 'config.yaml']) cpSync(join(ROOT, 'deploy/examples/app', file), join(directory, file));
    writeFileSync(join(directory, 'kustomization.yaml'), kustomization);
    return directory;
  };
  const copiedEnvoyConfig = (): string => {
    const text = readFileSync(join(ROOT, 'deploy/sidecar/envoy.yaml'), 'utf8');
    expect(text.match(/port_value: 4000\b/g)).toHaveLength(1);
    return text.replace(/port_value: 4000\b/, `port_value: ${APP_PORT_ELSEWHERE}`);
  };
  const svcCacheConfig = 'configMapGenerator:\n  - name: svc-cache-config\n    files: [config.yaml]\n';
  const replaceEnvoy = '  - name: svc-cache-envoy\n    behavior: replace\n    files: [envoy.yaml]\n';

  it('renders Envoy pointed at the new port, and only that config mounted', () => {
    if (!scratch) return;
    const directory = overlay(
      'overlay',
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [app.yaml]\ncomponents: [../svc-cache/sidecar, envoy-port]\n${svcCacheConfig}`,
    );
    mkdirSync(join(directory, 'envoy-port'));
    writeFileSync(join(directory, 'envoy-port/envoy.yaml'), copiedEnvoyConfig());
    writeFileSync(join(directory, 'envoy-port/kustomization.yaml'), `apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nconfigMapGenerator:\n${replaceEnvoy}`);

    const objects = parseAllDocuments(execFileSync('kubectl', ['kustomize', directory], { encoding: 'utf8' })).map((document) => document.toJS() as Yaml);
    const envoyConfigMaps = objects.filter((each) => each.kind === 'ConfigMap' && (each.metadata.name as string).startsWith('svc-cache-envoy'));
    expect(envoyConfigMaps).toHaveLength(1);
    const envoy = parseYaml(envoyConfigMaps[0]!.data['envoy.yaml'] as string) as Yaml;
    const origin = envoy.static_resources.clusters.find((each: Yaml) => each.name === 'graphql_origin');
    expect(origin.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: '127.0.0.1', port_value: APP_PORT_ELSEWHERE });
    expect(envoyConfigMaps[0]!.data['envoy.yaml']).not.toMatch(/port_value: 4000\b/);
    const volumes = objects.find((each) => each.kind === 'Deployment')!.spec.template.spec.volumes as Yaml[];
    expect(volumes.find((each) => each.name === 'svc-cache-envoy')?.configMap.name).toBe(envoyConfigMaps[0]!.metadata.name);
  });

  it("is refused when the overlay's own configMapGenerator replaces it, as the step says", () => {
    if (!scratch) return;
    const directory = overlay(
      'own-generator',
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [app.yaml]\ncomponents: [../svc-cache/sidecar]\n${svcCacheConfig}${replaceEnvoy}`,
    );
    writeFileSync(join(directory, 'envoy.yaml'), copiedEnvoyConfig());
    const run = spawnSync('kubectl', ['kustomize', directory], { encoding: 'utf8' });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('does not exist; cannot merge or replace');
  });
});
