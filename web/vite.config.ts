// Vite builds the app into dist/, which `headlab serve --web web/dist` serves.
// `npm run dev` proxies /api to a locally running `headlab serve` on port 8080.
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig({
  plugins: [svelte()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // One CSS file and one module script, no inline code: the page must run under a
    // Content-Security-Policy without 'unsafe-inline'.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
});
