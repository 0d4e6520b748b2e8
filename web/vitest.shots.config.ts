// Vitest configuration of the screenshot script (scripts/web.sh screenshots): not a test, a
// browser session that saves the pictures of docs/ from the real daemon.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/e2e/**/*.shots.ts'],
    environment: 'node',
    testTimeout: 300_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    reporters: ['verbose'],
  },
});
