import { SIDECAR_MAX_REQUESTS_PER_CONNECTION } from '../../src/gateway/processorClient.js';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Server } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isScalar, parse as parseYaml, parseDocument, visit } from 'yaml';
import { parseConfig } from '../../src/config/index.js';
import { configSchema } from '../../src/config/schema.js';
import { EXT_PROC_SERVICE } from '../../src/extproc/protocol.js';
import { SIDECAR_NODE_FLAGS } from '../../src/sidecar/index.js';

/**
 * The files that run svc-cache for real (deploy/sidecar/envoy.yaml, the Dockerfile and
 * docker-compose.yml) read as their consumers read them, and checked against what svc-cache itself
 * expects: ports, processing modes, buffer limits, mounted paths, secrets. The Kubernetes manifests
 * are checked as kustomize renders them, in kustomize.test.ts.
 */

const ROOT = join(import.meta.dirname, '../..');
// A CommonJS module whose types declare an ES default export.
const dockerignore = createRequire(import.meta.url)('@balena/dockerignore') as typeof import('@balena/dockerignore').default;
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

const DEFAULTS = configSchema.parse({ origin: { url: 'http://origin.test/graphql' } });
const CLI_DEFAULT_GRPC_PORT = 50051;
const CLI_DEFAULT_ADMIN_PORT = 9901;
const ENVOY_DEFAULT_MAX_REQUESTS = 1024;
const SECRETS_ENV = { SVC_PURGE_TOKEN: 'purge-token-for-tests', SVC_SCOPE_KEY_SECRET: 'scope-key-secret-for-tests' };

type Yaml = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const envoyText = read('deploy/sidecar/envoy.yaml');
const envoy = parseYaml(envoyText) as Yaml;
const listener = (name: string): Yaml => envoy.static_resources.listeners.find((each: Yaml) => each.name === name);
const cluster = (name: string): Yaml => envoy.static_resources.clusters.find((each: Yaml) => each.name === name);
const connectionManager = (name: string): Yaml => listener(name).filter_chains[0].filters[0].typed_config;
const graphqlFilters = (): Yaml[] => connectionManager('graphql').http_filters;
const extProc = (): Yaml => graphqlFilters().find((filter) => filter.name === 'envoy.filters.http.ext_proc')!.typed_config;
const socketPort = (address: Yaml): number => address.socket_address.port_value;
const endpointOf = (name: string): Yaml => cluster(name).load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;

describe('deploy/sidecar/envoy.yaml (Envoy 1.36)', () => {
  it('listens for GraphQL on 8080 and keeps its admin port on loopback 9902, clear of svc-cache admin on 9901', () => {
    expect(socketPort(listener('graphql').address)).toBe(8080);
    expect(envoy.admin.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 9902 });
    const ports = envoy.static_resources.listeners.map((each: Yaml) => socketPort(each.address));
    expect(ports).not.toContain(CLI_DEFAULT_ADMIN_PORT);
    expect(ports).not.toContain(CLI_DEFAULT_GRPC_PORT);
  });

  it('routes every path to the app in the same pod and strips the purge token at the router', () => {
    const routes = connectionManager('graphql').route_config.virtual_hosts[0].routes;
    expect(routes).toEqual([
      {
        match: { prefix: '/' },
        route: { cluster: 'graphql_origin', timeout: '30s' },
        request_headers_to_remove: [DEFAULTS.purge.header],
      },
    ]);
    expect(cluster('graphql_origin').type).toBe('STATIC');
    expect(endpointOf('graphql_origin')).toEqual({ address: '127.0.0.1', port_value: 4000 });
  });

  // The deployment audit: Envoy's default of an hour against Node's 5 s keep-alive gave a 503
  // "connection termination" whenever a request met the app closing its idle connection.
  it("closes idle connections to the app before a Node server's keep-alive timeout does, over HTTP/1.1", () => {
    const protocol = cluster('graphql_origin').typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
    expect(protocol.explicit_http_config).toEqual({ http_protocol_options: {} });
    const nodeKeepAliveMs = new Server().keepAliveTimeout;
    expect(nodeKeepAliveMs).toBe(5000);
    expect(seconds(protocol.common_http_protocol_options.idle_timeout) * 1000).toBeLessThan(nodeKeepAliveMs);
  });

  it('takes the client address from the connection and trusts no client-supplied x-forwarded-for hop', () => {
    expect(connectionManager('graphql').use_remote_address).toBe(true);
    expect(connectionManager('graphql').xff_num_trusted_hops).toBe(0);
  });

  it('logs the path without its query string', () => {
    const format = connectionManager('graphql').access_log[0].typed_config.log_format.json_format;
    expect(format.path).toBe('%PATH(NQ)%');
    expect(JSON.stringify(format)).not.toMatch(/%REQ\(:PATH\)%/);
  });

  it('compresses on the way out after ext_proc, and runs ext_proc before the router', () => {
    // Encoding runs the chain backwards: listed first, the compressor sees responses last.
    expect(graphqlFilters().map((filter) => filter.name)).toEqual([
      'envoy.filters.http.compressor',
      'envoy.filters.http.ext_proc',
      'envoy.filters.http.router',
    ]);
    const compressor = graphqlFilters()[0]!.typed_config;
    expect(compressor.compressor_library.typed_config['@type']).toBe('type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip');
  });

  it('runs ext_proc with headers SEND, bodies BUFFERED and trailers SKIP both ways', () => {
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

  it('lets a coalesced request wait for its leader inside one message_timeout', () => {
    expect(DEFAULTS.cache.coalesceWaitMs).toBeLessThan(seconds(extProc().message_timeout) * 1000);
  });

  it('admits no more requests to the app than ext_proc streams to the sidecar', () => {
    const app = cluster('graphql_origin').circuit_breakers.thresholds[0];
    const sidecar = cluster('svc_cache').circuit_breakers.thresholds[0];
    expect(app.max_requests + app.max_pending_requests).toBeLessThanOrEqual(sidecar.max_requests);
  });

  it('buffers more than the largest request svc-cache reads and the largest response it caches', () => {
    const limit = listener('graphql').per_connection_buffer_limit_bytes as number;
    expect(limit).toBe(16 * 1024 * 1024);
    expect(limit).toBeGreaterThan(DEFAULTS.limits.maxRequestBodyBytes);
    expect(limit).toBeGreaterThan(DEFAULTS.limits.maxResponseBodyBytes);
  });

  // An HTTP/2 client's stream is limited by its initial window, not the listener's buffer (the
  // deployment audit): both are written out, equal, so that raising one shows the other.
  it("gives an HTTP/2 client's stream the same buffer as an HTTP/1.1 connection", () => {
    const window = connectionManager('graphql').http2_protocol_options.initial_stream_window_size as number;
    expect(window).toBe(listener('graphql').per_connection_buffer_limit_bytes);
    expect(window).toBeGreaterThan(DEFAULTS.limits.maxResponseBodyBytes);
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

  // The deployment audit: Envoy's stats (ext_proc's failure_mode_allowed among them) reached no
  // Prometheus, and its admin must stay on loopback.
  it('serves its stats for Prometheus on :9903, GET /stats/prometheus alone, passed to the loopback admin', () => {
    expect(socketPort(listener('stats').address)).toBe(9903);
    const routes = connectionManager('stats').route_config.virtual_hosts[0].routes as Yaml[];
    expect(routes).toEqual([
      {
        match: { path: '/stats/prometheus', headers: [{ name: ':method', string_match: { exact: 'GET' } }] },
        route: { cluster: 'envoy_admin', timeout: '5s' },
      },
      { match: { prefix: '/' }, direct_response: { status: 404 } },
    ]);
    expect(connectionManager('stats').http_filters.map((filter: Yaml) => filter.name)).toEqual(['envoy.filters.http.router']);
    expect(endpointOf('envoy_admin')).toEqual(envoy.admin.address.socket_address);
    // No other route reaches the admin.
    const routed = envoy.static_resources.listeners.flatMap((each: Yaml) =>
      (each.filter_chains[0].filters[0].typed_config.route_config.virtual_hosts as Yaml[]).flatMap((host) => (host.routes as Yaml[]).map((route) => route.route?.cluster)),
    );
    expect(routed.filter((name: string | undefined) => name === 'envoy_admin')).toHaveLength(1);
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
    expect(finalStage).toContain('COPY --from=build /app/dist ./dist');
    expect(finalStage).toContain('COPY proto ./proto');
  });

  it('ships the development gateway and demo only in the demo stage, never in the production image', () => {
    expect(instructions).toContain('FROM node:20-alpine AS demo');
    expect(finalStage.join('\n')).not.toMatch(/dist-dev|demo/);
    const demoStage = instructions.slice(instructions.indexOf('FROM node:20-alpine AS demo'), instructions.findLastIndex((line) => line.startsWith('FROM ')));
    expect(demoStage).toContain('COPY --from=build /app/dist-dev ./dist-dev');
  });

  it("runs as a non-root user with node, the sidecar's Node flags, dist/cli.js serve --config /etc/svc-cache/config.yaml", () => {
    const user = finalStage.find((line) => line.startsWith('USER '))?.slice('USER '.length);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(0|root)(:|$)/);
    expect(finalStage).toContain(`ENTRYPOINT [${['node', ...SIDECAR_NODE_FLAGS, 'dist/cli.js'].map((part) => `"${part}"`).join(', ')}]`);
    expect(finalStage).toContain('CMD ["serve", "--config", "/etc/svc-cache/config.yaml"]');
  });

  it("passes Node flags this Node accepts, which give the young generation 16 MiB a semi-space from the start, whatever the host's memory", () => {
    const newSpace = spawnSync(
      process.execPath,
      [...SIDECAR_NODE_FLAGS, '-e', "process.stdout.write(String(require('node:v8').getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size))"],
      { encoding: 'utf8' },
    );
    expect(newSpace.stderr).toBe('');
    expect(Number(newSpace.stdout)).toBeGreaterThanOrEqual(16 * 1024 * 1024);
  });

  it.skipIf(!existsSync(join(ROOT, '.git')))('sends the build every file it copies, and nothing else of the repository (needs a git checkout)', () => {
    // Read as Docker reads it (@balena/dockerignore, as testcontainers and dockerode do): a COPY of
    // a path the context lacks fails the build (scripts/ did, from the dashboard's build step on).
    const ignore = dockerignore().add(read('.dockerignore'));
    const copied = dockerfile
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => /^(COPY|ADD)\s/i.test(line) && !/\s--from=/.test(line))
      .flatMap((line) => {
        const sources = line.replace(/^\S+\s+/, '').replace(/--\S+\s+/g, '');
        const parts = sources.startsWith('[') ? (JSON.parse(sources) as string[]) : sources.split(/\s+/);
        return parts.slice(0, -1).map((source) => source.replace(/^\.\//, '').replace(/\/$/, ''));
      });
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter((file) => file !== '');
    const underCopies = tracked.filter((file) => copied.some((source) => file === source || file.startsWith(`${source}/`)));
    expect(underCopies.length).toBeGreaterThan(copied.length);
    expect(underCopies.filter((file) => ignore.ignores(file))).toEqual([]);
    expect(tracked.filter((file) => !ignore.ignores(file) && !underCopies.includes(file))).toEqual([]);
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

  it('runs Envoy 1.36 and the demo app in the svc-cache container network, as a pod does, with deploy/sidecar/envoy.yaml mounted', () => {
    expect(Object.keys(services).sort()).toEqual(['envoy', 'origin', 'redis', 'svc-cache']);
    expect(services.envoy!.image).toBe('envoyproxy/envoy:v1.36-latest');
    expect(services.envoy!.network_mode).toBe('service:svc-cache');
    expect(services.origin!.network_mode).toBe('service:svc-cache');
    expect(mountsOf('envoy')).toEqual([{ source: './deploy/sidecar/envoy.yaml', target: '/etc/envoy/envoy.yaml' }]);
    expect(services.envoy!.command).toEqual(['envoy', '--config-path', '/etc/envoy/envoy.yaml', '--concurrency', '1']);
  });

  it('publishes Envoy on 8080 and runs svc-cache with the compose config mounted where the image expects it', () => {
    const svcCache = services['svc-cache']!;
    expect(svcCache.ports).toContain('8080:8080');
    expect(svcCache.command).toEqual(['serve', '--config', '/etc/svc-cache/config.yaml']);
    // The image's entry point carries the sidecar's Node flags.
    expect(svcCache.entrypoint).toBeUndefined();
    expect(mountsOf('svc-cache')).toEqual([{ source: './deploy/compose/config.yaml', target: '/etc/svc-cache/config.yaml' }]);
    for (const mount of [...mountsOf('svc-cache'), ...mountsOf('envoy')]) expect(existsSync(join(ROOT, mount.source))).toBe(true);
    expect(Object.keys(svcCache.environment)).toEqual(['SVC_PURGE_TOKEN', 'SVC_SCOPE_KEY_SECRET']);
  });

  it('has a compose config that is valid and names the compose services', () => {
    const config = parseConfig(read('deploy/compose/config.yaml'), { source: 'deploy/compose/config.yaml', env: SECRETS_ENV });
    expect(new URL(config.origin.url).host).toBe('127.0.0.1:4000');
    expect(new URL(config.redis!.url!).hostname).toBe('redis');
    expect(config.purge.tokens).toEqual([SECRETS_ENV.SVC_PURGE_TOKEN]);
    expect(config.cache.scopeKeySecret).toBe(SECRETS_ENV.SVC_SCOPE_KEY_SECRET);
    expect(endpointOf('graphql_origin')).toEqual({ address: '127.0.0.1', port_value: 4000 });
    expect(services.origin!.command).toEqual(['demo-origin', '--port', '4000']);
    expect(services.origin!.build).toEqual({ context: '.', target: 'demo' });
  });
});

// The deployment audit: `scopeKeySecret: ${SVC_SCOPE_KEY_SECRET}` unquoted read a secret of digits as
// a number, which svc-cache refused (README, Environment variables).
describe('the svc-cache configurations shipped (deploy/, examples/)', () => {
  const files = ['deploy/compose/config.yaml', 'deploy/examples/app/config.yaml', 'examples/config.yaml'];

  it.each(files)('%s quotes every ${...} reference', (file) => {
    const unquoted: string[] = [];
    visit(parseDocument(read(file)), {
      Scalar(_key, node) {
        if (isScalar(node) && typeof node.value === 'string' && node.value.includes('${') && node.type === 'PLAIN') unquoted.push(node.value);
      },
    });
    expect(unquoted).toEqual([]);
  });

  it.each(files)('%s keeps a secret of digits or `true` a string', (file) => {
    const digits = '12345678901234567890';
    const env = { SVC_PURGE_TOKEN: 'true', SVC_SCOPE_KEY_SECRET: digits, SVC_REDIS_URL: 'redis://:1234@redis:6379', REDIS_PASSWORD: '1234', JWT_SECRET: digits.repeat(2) };
    const config = parseConfig(read(file), { source: file, env, baseDir: join(ROOT, 'examples') });
    expect(config.purge.tokens).toEqual(['true']);
    expect(config.cache.scopeKeySecret).toBe(digits);
  });
});

function seconds(duration: string): number {
  return Number(duration.replace(/s$/, ''));
}
