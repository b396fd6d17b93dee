import { defineConfig } from 'vite';

/**
 * The dashboard is served by `svc serve` at /dashboard/ (src/server/dashboard.ts). JSX is compiled by
 * Vite's own esbuild (no React plugin: the production build needs no Babel, and `npm run dev`
 * reloads the page instead of hot-swapping components). Everything is a file of the build: no
 * inline script or style, so the page runs under `default-src 'self'`.
 */
export default defineConfig({
  base: '/dashboard/',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Nothing becomes a data: URI inside the scripts or styles.
    assetsInlineLimit: 0,
    // A separate file for the chart library: only pages with charts load it.
    chunkSizeWarningLimit: 400,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev --workspace dashboard` beside `npm start`: API calls go to the running service.
    proxy: { '/v1': 'http://127.0.0.1:3000' },
  },
});
