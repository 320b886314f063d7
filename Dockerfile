# svc-cache: `docker build -t svc-cache .`, then run as Envoy's ext_proc sidecar with a config file
# mounted at /etc/svc-cache/config.yaml (docker-compose.yml and deploy/ show both).
# `docker build --target demo -t svc-cache-demo .` builds the development image instead: the demo
# Todo API and the development gateway, which the production image does not hold.

# Compiles TypeScript: the sidecar to dist/, the development commands to dist-dev/; dev
# dependencies stay in this stage.
FROM node:20-alpine AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.dev.json ./
COPY proto ./proto
COPY src ./src
COPY scripts ./scripts
RUN npm run build
RUN npm run build:dev

# Production dependencies only, installed from the same lock file.
FROM node:20-alpine AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# The development image: the demo origin (`demo-origin`) and gateway, for docker-compose.yml and
# the example app in deploy/examples/app.
FROM node:20-alpine AS demo
ENV NODE_ENV=production
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist-dev ./dist-dev
COPY package.json ./
COPY proto ./proto
USER 1000:1000
EXPOSE 4000 8080
ENTRYPOINT ["node", "dist-dev/devCli.js"]
CMD ["demo-origin", "--port", "4000"]

# The production image (the default target): the sidecar only.
FROM node:20-alpine
ENV NODE_ENV=production
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# package.json's "type": "module" makes dist/*.js ES modules; the ext_proc .proto files are
# loaded at run time, relative to dist/.
COPY package.json ./
COPY proto ./proto
# The image's unprivileged user (uid 1000): nothing here needs root, and Kubernetes'
# runAsNonRoot can check the numeric id.
USER 1000:1000
# 50051 ext_proc gRPC (and gRPC health), 9901 admin (/healthz, /readyz, /metrics).
EXPOSE 50051 9901
# A young generation of 16 MiB per semi-space, whatever the memory limit and through quiet spells;
# Node accepts the minimum on its command line only (docs/performance.md, Garbage collection).
ENTRYPOINT ["node", "--max-semi-space-size=16", "--min-semi-space-size=16", "dist/cli.js"]
CMD ["serve", "--config", "/etc/svc-cache/config.yaml"]
