import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useResponseCache } from '@envelop/response-cache';
import { createSchema, createYoga } from 'graphql-yoga';
import { demoSchemaSDL } from '../../src/demo/schema.js';
import { BENCH_TODOS, GRAPHQL_PATH } from '../workload.js';
import { answerHarness } from './control.js';

/**
 * The peer: GraphQL Yoga with @envelop/response-cache keeping results in memory, serving the demo
 * schema with the same todos the sidecar is fed, so a HIT here returns the same bytes over HTTP.
 */

const yoga = createYoga({
  schema: createSchema({ typeDefs: demoSchemaSDL, resolvers: { Query: { todos: () => BENCH_TODOS } } }),
  graphqlEndpoint: GRAPHQL_PATH,
  graphiql: false,
  landingPage: false,
  logging: false,
  plugins: [useResponseCache({ session: () => null, ttl: 600_000 })],
});
const server = createServer(yoga);
server.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
answerHarness({
  port: (server.address() as AddressInfo).port,
  close: () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
});
