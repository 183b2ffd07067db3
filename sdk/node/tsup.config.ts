import { defineConfig } from 'tsup';

/**
 * The SDK's build: one ESM and one CJS file plus types. The Shape A evaluators it imports from the
 * server's source (services/processor/sensitive/, services/processor/exclusion-criteria.ts,
 * services/shared/search-language.ts) are bundled in, and so is `re2js`, the pure-JS RE2 engine
 * they run custom patterns with: the published package keeps no runtime dependency (docs/sdk.md).
 */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  target: 'node20',
  noExternal: ['re2js'],
});
