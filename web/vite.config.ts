// Vite build of the dashboard. The output goes to bundle/, which is committed and embedded by the
// C build (so building gpumon needs no Node.js), or to $GM_WEB_OUT (scripts/web.sh check builds
// into a temporary folder to compare); `npm run dev` proxies the API to a daemon at $GM_DEV_API.
import { defineConfig } from 'vitest/config';

const api = process.env.GM_DEV_API ?? 'http://127.0.0.1:9401';

export default defineConfig({
  // Relative asset URLs: the page also works behind a proxy that serves it under a sub-path.
  base: './',
  // Preact's automatic JSX runtime through esbuild: no Babel preset needed.
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: process.env.GM_WEB_OUT ?? 'bundle',
    emptyOutDir: true,
    target: 'es2020',
    assetsDir: 'assets',
    sourcemap: false,
    // The embedder gzips every file itself; Vite's size report only slows the build.
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
  },
  server: {
    proxy: {
      '/api': api,
      '/ws': { target: api.replace(/^http/, 'ws'), ws: true },
    },
  },
  test: {
    include: ['tests/unit/**/*.test.ts'],
    environment: 'node',
  },
});
