// The notebook build: the explorer's components as ONE self-contained script, dist-notebook/headlab_views.js
// (an IIFE defining `headlabViews`; src/notebook/main.ts), which the Python module installs and
// python/headlab/views.py puts in each view's HTML. No other file: the components' CSS is injected
// by the script itself, no font or asset is fetched. `npm run build` makes it after the app.
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig({
  plugins: [svelte({ compilerOptions: { css: 'injected' }, emitCss: false })],
  define: { 'process.env.NODE_ENV': '"production"' },
  publicDir: false, // public/ holds the app's favicon: nothing of it belongs in a notebook
  build: {
    outDir: 'dist-notebook',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    lib: {
      entry: 'src/notebook/main.ts',
      name: 'headlabViews',
      formats: ['iife'],
      fileName: () => 'headlab_views.js',
    },
  },
});
