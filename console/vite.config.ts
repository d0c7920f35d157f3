import { defineConfig } from 'vite';

// The console is served by the service under /console: hashed file names under assets/ (cached for
// a year), one entry script and one stylesheet, nothing inline, nothing from another origin.
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill is an inline script; every browser the console supports preloads modules itself.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
