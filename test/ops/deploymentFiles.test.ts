import { SIDECAR_MAX_REQUESTS_PER_CONNECTION } from '../../src/gateway/processorClient.js';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { parseConfig } from '../../src/config/index.js';
import { configSchema } from '../../src/config/schema.js';
import { EXT_PROC_SERVICE } from '../../src/extproc/protocol.js';

/**
 * The files that run svc-cache for real (envoy/envoy.yaml, the Dockerfile, docker-compose.yml and
 * the Kubernetes manifests in deploy/) read as their consumers read them, and checked against what
 * svc-cache itself expects: ports, processing modes, buffer limits, mounted paths, secrets, probes.
 */

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

const DEFAULTS = configSchema.parse({ origin: { url: 'http://origin.test/graphql' } });
const CLI_DEFAULT_GRPC_PORT = 50051;
const CLI_DEFAULT_ADMIN_PORT = 9901;
const ENVOY_DEFAULT_MAX_REQUESTS = 1024;
const SECRETS_ENV = { SVC_PURGE_TOKEN: 'purge-token-for-tests', SVC_SCOPE_KEY_SECRET: 'scope-key-secret-for-tests' };

type Yaml = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const envoyText = read('envoy/envoy.yaml');
const envoy = parseYaml(envoyText) as Yaml;
const listener = (name: string): Yaml => envoy.static_resources.listeners.find((each: Yaml) => each.name === name);
const cluster = (name: string): Yaml => envoy.static_resources.clusters.find((each: Yaml) => each.name === name);
const connectionManager = (name: string): Yaml => listener(name).filter_chains[0].filters[0].typed_config;
const graphqlFilters = (): Yaml[] => connectionManager('graphql').http_filters;
const extProc = (): Yaml => graphqlFilters().find((filter) => filter.name === 'envoy.filters.http.ext_proc')!.typed_config;
const socketPort = (address: Yaml): number => address.socket_address.port_value;
const endpointOf = (name: string): Yaml => cluster(name).load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;

describe('envoy/envoy.yaml (Envoy 1.36)', () => {
  it('listens for GraphQL on 8080 and keeps its admin port on loopback 9902, clear of svc-cache admin on 9901', () => {
    expect(socketPort(listener('graphql').address)).toBe(8080);
    expect(envoy.admin.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 9902 });
    const ports = envoy.static_resources.listeners.map((each: Yaml) => socketPort(each.address));
    expect(ports).not.toContain(CLI_DEFAULT_ADMIN_PORT);
    expect(ports).not.toContain(CLI_DEFAULT_GRPC_PORT);
  });

  it('routes every path to the origin cluster', () => {
    const routes = connectionManager('graphql').route_config.virtual_hosts[0].routes;
    expect(routes).toEqual([{ match: { prefix: '/' }, route: { cluster: 'graphql_origin', timeout: '30s' } }]);
    expect(cluster('graphql_origin').type).toBe('STRICT_DNS');
  });

  it('runs ext_proc before the router with headers SEND, bodies BUFFERED and trailers SKIP both ways', () => {
    expect(graphqlFilters().map((filter) => filter.name)).toEqual(['envoy.filters.http.ext_proc', 'envoy.filters.http.router']);
    expect(extProc()['@type']).toBe('type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor');
    expect(extProc().processing_mode).toEqual({
      request_header_mode: 'SEND',
      request_body_mode: 'BUFFERED',
      request_trailer_mode: 'SKIP',
      response_header_mode: 'SEND',
      response_body_mode: 'BUFFERED',
      response_trailer_mode: 'SKIP',
    });
  });

  it('fails open, allows mode_override and bounds each answer at 1 s with room to extend it', () => {
    expect(extProc().failure_mode_allow).toBe(true);
    expect(extProc().allow_mode_override).toBe(true);
    expect(extProc().message_timeout).toBe('1s');
    expect(seconds(extProc().max_message_timeout)).toBeGreaterThan(seconds(extProc().message_timeout));
    expect(extProc().grpc_service).toEqual({ envoy_grpc: { cluster_name: 'svc_cache' } });
  });

  it('buffers more than the largest request svc-cache reads and the largest response it caches', () => {
    const limit = listener('graphql').per_connection_buffer_limit_bytes as number;
    expect(limit).toBe(16 * 1024 * 1024);
    expect(limit).toBeGreaterThan(DEFAULTS.limits.maxRequestBodyBytes);
    expect(limit).toBeGreaterThan(DEFAULTS.limits.maxResponseBodyBytes);
  });

  it('reaches the sidecar over HTTP/2 on 127.0.0.1:50051 with raised circuit breakers and a gRPC health check', () => {
    const sidecar = cluster('svc_cache');
    expect(sidecar.type).toBe('STATIC');
    expect(endpointOf('svc_cache')).toEqual({ address: '127.0.0.1', port_value: CLI_DEFAULT_GRPC_PORT });
    const protocol = sidecar.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
    expect(protocol.explicit_http_config).toHaveProperty('http2_protocol_options');
    // Under Node's rapid-reset burst, and the same bound the development gateway plays.
    expect(protocol.common_http_protocol_options.max_requests_per_connection).toBe(SIDECAR_MAX_REQUESTS_PER_CONNECTION);
    expect(SIDECAR_MAX_REQUESTS_PER_CONNECTION).toBeLessThan(1000);
    const thresholds = sidecar.circuit_breakers.thresholds[0];
    expect(thresholds.max_requests).toBeGreaterThan(ENVOY_DEFAULT_MAX_REQUESTS);
    expect(thresholds.max_pending_requests).toBeGreaterThan(ENVOY_DEFAULT_MAX_REQUESTS);
    expect(sidecar.health_checks[0].grpc_health_check).toEqual({ service_name: EXT_PROC_SERVICE });
    expect(sidecar.common_lb_config.healthy_panic_threshold).toEqual({ value: 0 });
  });

  it('neither adds nor relies on x-envoy-* headers', () => {
    const router = graphqlFilters().find((filter) => filter.name === 'envoy.filters.http.router')!.typed_config;
    expect(router.suppress_envoy_headers).toBe(true);
    expect(JSON.stringify(envoy).toLowerCase()).not.toContain('x-envoy');
  });

  it('answers Kubernetes readiness on :8081/ready without involving svc-cache or the origin', () => {
    expect(socketPort(listener('health').address)).toBe(8081);
    const healthCheck = connectionManager('health').http_filters[0].typed_config;
    expect(healthCheck.pass_through_mode).toBe(false);
    expect(healthCheck.headers).toEqual([{ name: ':path', string_match: { exact: '/ready' } }]);
    expect(healthCheck).not.toHaveProperty('cluster_min_healthy_percentages');
  });
});

describe('Dockerfile and .dockerignore', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const finalStage = instructions.slice(instructions.findLastIndex((line) => line.startsWith('FROM ')));

  it('builds in one stage and runs on a small Node 20 image with production dependencies only', () => {
    expect(instructions.filter((line) => line.startsWith('FROM ')).length).toBeGreaterThanOrEqual(2);
    expect(instructions).toContain('RUN npm run build');
    expect(instructions.some((line) => /^RUN npm ci\b.*--omit=dev/.test(line))).toBe(true);
    expect(finalStage[0]).toMatch(/^FROM node:20-(alpine|slim|bookworm-slim)$/);
    expect(finalStage.some((line) => line.startsWith('COPY --from=build /app/dist'))).toBe(true);
    expect(finalStage).toContain('COPY proto ./proto');
  });

  it('runs as a non-root user with node dist/cli.js serve --config /etc/svc-cache/config.yaml', () => {
    const user = finalStage.find((line) => line.startsWith('USER '))?.slice('USER '.length);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(0|root)(:|$)/);
    expect(finalStage).toContain('ENTRYPOINT ["node", "dist/cli.js"]');
    expect(finalStage).toContain('CMD ["serve", "--config", "/etc/svc-cache/config.yaml"]');
  });

  it('sends only what the build copies', () => {
    const ignore = read('.dockerignore').split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
    expect(ignore[0]).toBe('**');
    expect(ignore).toEqual(expect.arrayContaining(['!package.json', '!package-lock.json', '!proto/**', '!src/**']));
  });
});

describe('docker-compose.yml', () => {
  const compose = parseYaml(read('docker-compose.yml')) as Yaml;
  const services = compose.services as Record<string, Yaml>;
  const mountsOf = (service: string): Array<{ source: string; target: string }> =>
    (services[service]!.volumes as string[]).map((volume) => {
      const [source, target] = volume.split(':');
      return { source: source!, target: target! };
    });

  it('runs Envoy 1.36 in the svc-cache container network, as a pod does, with envoy/envoy.yaml mounted', () => {
    expect(Object.keys(services).sort()).toEqual(['envoy', 'origin', 'redis', 'svc-cache']);
    expect(services.envoy!.image).toBe('envoyproxy/envoy:v1.36-latest');
    expect(services.envoy!.network_mode).toBe('service:svc-cache');
    expect(mountsOf('envoy')).toEqual([{ source: './envoy/envoy.yaml', target: '/etc/envoy/envoy.yaml' }]);
    expect(services.envoy!.command).toEqual(['envoy', '--config-path', '/etc/envoy/envoy.yaml']);
  });

  it('publishes Envoy on 8080 and runs svc-cache with the compose config mounted where the image expects it', () => {
    const svcCache = services['svc-cache']!;
    expect(svcCache.ports).toContain('8080:8080');
    expect(svcCache.command).toEqual(['serve', '--config', '/etc/svc-cache/config.yaml']);
    expect(mountsOf('svc-cache')).toEqual([{ source: './deploy/compose/config.yaml', target: '/etc/svc-cache/config.yaml' }]);
    for (const mount of [...mountsOf('svc-cache'), ...mountsOf('envoy')]) expect(existsSync(join(ROOT, mount.source))).toBe(true);
    expect(Object.keys(svcCache.environment)).toEqual(['SVC_PURGE_TOKEN', 'SVC_SCOPE_KEY_SECRET']);
  });

  it('has a compose config that is valid and names the compose services', () => {
    const config = parseConfig(read('deploy/compose/config.yaml'), { source: 'deploy/compose/config.yaml', env: SECRETS_ENV });
    expect(new URL(config.origin.url).host).toBe('origin:4000');
    expect(new URL(config.redis!.url!).hostname).toBe('redis');
    expect(config.purge.tokens).toEqual([SECRETS_ENV.SVC_PURGE_TOKEN]);
    expect(config.cache.scopeKeySecret).toBe(SECRETS_ENV.SVC_SCOPE_KEY_SECRET);
    expect(endpointOf('graphql_origin')).toEqual({ address: 'origin', port_value: 4000 });
    expect(services.origin!.command).toEqual(['demo-origin', '--port', '4000']);
  });
});

describe('Kubernetes manifests (deploy/*.yaml)', () => {
  const manifests = readdirSync(join(ROOT, 'deploy'))
    .filter((file) => file.endsWith('.yaml'))
    .flatMap((file) => parseAllDocuments(read(join('deploy', file))).map((document) => document.toJS() as Yaml));
  const find = (kind: string, name: string): Yaml => {
    const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name} in deploy/`);
    return found;
  };
  const pod = (): Yaml => find('Deployment', 'svc-cache').spec.template.spec;
  const container = (name: string): Yaml => pod().containers.find((each: Yaml) => each.name === name);
  const volume = (name: string): Yaml => pod().volumes.find((each: Yaml) => each.name === name);
  const mountHolding = (containerName: string, file: string): { configMap: string; key: string } => {
    const mount = container(containerName).volumeMounts.find((each: Yaml) => file.startsWith(`${each.mountPath}/`));
    expect(mount, `a volume mounted over ${file}`).toBeDefined();
    expect(mount.subPath, 'subPath mounts never see ConfigMap updates').toBeUndefined();
    return { configMap: volume(mount.name).configMap.name, key: file.slice(mount.mountPath.length + 1) };
  };
  const configMapFile = (configMap: string, key: string): string => find('ConfigMap', configMap).data[key];
  const svcCacheConfigText = (): string => {
    const args = container('svc-cache').args as string[];
    const path = args[args.indexOf('--config') + 1]!;
    const { configMap, key } = mountHolding('svc-cache', path);
    return configMapFile(configMap, key);
  };

  it('every document is a Kubernetes object', () => {
    for (const manifest of manifests) {
      expect(manifest.apiVersion).toBeTypeOf('string');
      expect(manifest.kind).toBeTypeOf('string');
      expect(manifest.metadata.name).toBeTypeOf('string');
    }
  });

  it('runs Envoy 1.36 and svc-cache side by side in one pod', () => {
    expect(pod().containers.map((each: Yaml) => each.name)).toEqual(['envoy', 'svc-cache']);
    expect(container('envoy').image).toBe('envoyproxy/envoy:v1.36-latest');
    expect(container('svc-cache').args.slice(0, 1)).toEqual(['serve']);
  });

  it('mounts envoy/envoy.yaml, verbatim, from a ConfigMap where Envoy reads it', () => {
    const command = container('envoy').command as string[];
    const path = command[command.indexOf('--config-path') + 1]!;
    const { configMap, key } = mountHolding('envoy', path);
    expect(configMapFile(configMap, key)).toBe(envoyText);
  });

  it('mounts a valid svc-cache config whose secrets come from a Secret through the environment', () => {
    const text = svcCacheConfigText();
    expect(text).toContain('"${SVC_PURGE_TOKEN}"');
    expect(text).toContain('${SVC_SCOPE_KEY_SECRET}');
    const config = parseConfig(text, { source: 'svc-cache-config', env: SECRETS_ENV });
    expect(config.purge.tokens).toEqual([SECRETS_ENV.SVC_PURGE_TOKEN]);
    expect(config.cache.scopeKeySecret).toBe(SECRETS_ENV.SVC_SCOPE_KEY_SECRET);
    const env = container('svc-cache').env as Yaml[];
    for (const name of Object.keys(SECRETS_ENV)) {
      const variable = env.find((each) => each.name === name);
      expect(variable?.valueFrom?.secretKeyRef?.name, `${name} from a Secret`).toBe('svc-cache-secrets');
      expect(variable?.value, `${name} written in the manifest`).toBeUndefined();
    }
    expect(manifests.some((manifest) => manifest.kind === 'Secret'), 'secret values in the repository').toBe(false);
  });

  it('points the config at the Redis Service, which runs as a Deployment of its own', () => {
    const config = parseConfig(svcCacheConfigText(), { source: 'svc-cache-config', env: SECRETS_ENV });
    const redisUrl = new URL(config.redis!.url!);
    const service = find('Service', redisUrl.hostname);
    expect(service.spec.ports.map((port: Yaml) => port.port)).toContain(Number(redisUrl.port));
    const deployment = find('Deployment', 'svc-cache-redis');
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
  });

  it('exposes Envoy, not the sidecar, through the Service', () => {
    const service = find('Service', 'svc-cache');
    expect(find('Deployment', 'svc-cache').spec.template.metadata.labels).toMatchObject(service.spec.selector);
    const port = container('envoy').ports.find((each: Yaml) => each.name === service.spec.ports[0].targetPort);
    expect(port.containerPort).toBe(socketPort(listener('graphql').address));
    expect(container('svc-cache').ports.map((each: Yaml) => each.containerPort).sort()).toEqual([CLI_DEFAULT_ADMIN_PORT, CLI_DEFAULT_GRPC_PORT].sort());
  });

  it('keeps pod readiness independent of Redis: Envoy /ready and the gRPC health of the ext_proc port', () => {
    const envoyReadiness = container('envoy').readinessProbe;
    const healthPort = container('envoy').ports.find((each: Yaml) => each.name === envoyReadiness.httpGet.port);
    expect(envoyReadiness.httpGet.path).toBe('/ready');
    expect(healthPort.containerPort).toBe(socketPort(listener('health').address));
    expect(container('svc-cache').readinessProbe.grpc).toEqual({ port: CLI_DEFAULT_GRPC_PORT, service: EXT_PROC_SERVICE });
    expect(JSON.stringify(pod())).not.toContain('/readyz');
    expect(container('svc-cache').livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' });
  });

  it('lets svc-cache outlive Envoy at termination and drain within the grace period', () => {
    const sleepOf = (name: string): number => Number(container(name).lifecycle.preStop.exec.command[1]);
    expect(sleepOf('svc-cache')).toBeGreaterThan(sleepOf('envoy'));
    const svcCacheDrainSeconds = 10 + 5;
    expect(pod().terminationGracePeriodSeconds).toBeGreaterThan(sleepOf('svc-cache') + svcCacheDrainSeconds);
  });

  it('gives every container resources and runs none as root', () => {
    const pods = manifests.filter((manifest) => manifest.kind === 'Deployment').map((deployment) => deployment.spec.template.spec);
    expect(pods.length).toBeGreaterThanOrEqual(2);
    for (const spec of pods) {
      expect(spec.securityContext.runAsNonRoot).toBe(true);
      for (const each of spec.containers as Yaml[]) {
        expect(each.resources.requests, each.name).toHaveProperty('cpu');
        expect(each.resources.limits, each.name).toHaveProperty('memory');
        expect(each.securityContext.allowPrivilegeEscalation, each.name).toBe(false);
      }
    }
  });
});

function seconds(duration: string): number {
  return Number(duration.replace(/s$/, ''));
}
