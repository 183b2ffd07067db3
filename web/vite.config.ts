import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const root = import.meta.dirname;

/**
 * Writes a `.br` and a `.gz` beside every text asset after the build, so the API serves
 * precompressed files (@fastify/static `preCompressed`) without compressing per request.
 */
function precompress(): Plugin {
  return {
    name: 'tapline-precompress',
    apply: 'build',
    closeBundle() {
      const out = path.join(root, 'dist');
      const walk = (dir: string): string[] =>
        readdirSync(dir).flatMap((f) => {
          const p = path.join(dir, f);
          return statSync(p).isDirectory() ? walk(p) : [p];
        });
      for (const file of walk(out)) {
        if (!/\.(js|css|html|svg|json|txt)$/.test(file)) continue;
        const body = readFileSync(file);
        writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
        writeFileSync(
          `${file}.br`,
          brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
        );
      }
    },
  };
}

export default defineConfig({
  root,
  base: '/',
  plugins: [react(), precompress()],
  build: {
    outDir: path.join(root, 'dist'),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    chunkSizeWarningLimit: 400,
  },
  server: {
    // `npm run dev:web` next to a running API: same-origin paths are proxied to it.
    proxy: { '/v1': 'http://127.0.0.1:8080' },
  },
});
