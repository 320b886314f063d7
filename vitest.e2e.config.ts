import { defineConfig } from 'vitest/config';

/**
 * `npm run test:e2e`: the tests that need a Docker engine (real Envoy, Redis and the svc-cache
 * image), which vitest.config.ts leaves out of `npm test`. Building the image and pulling Envoy
 * take minutes on a cold machine.
 */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 15 * 60_000,
    pool: 'forks',
  },
});
