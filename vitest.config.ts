import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // end-to-end tests spawn processes: two workers match the two cores of the CI machine
    maxWorkers: 2,
  },
});
