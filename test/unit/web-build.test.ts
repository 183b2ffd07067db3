import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HASH_FILE, webBuildNeeded, webInputsHash } from '../../infra/web-build.js';

/** `npm start` rebuilds the dashboard bundle only when web/ (or the lockfile, or the mode) changed. */
describe('web bundle build skip', () => {
  let root: string;
  const put = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  };
  const recordBuild = () => {
    put('web/dist/index.html', '<html></html>');
    put(`web/dist/${HASH_FILE}`, webInputsHash(root) + '\n');
  };

  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'tapline-web-build-'));
    put('web/src/main.tsx', 'export const a = 1;');
    put('web/index.html', '<div id="root"></div>');
    put('web/vite.config.ts', 'export default {};');
    put('package-lock.json', '{"lockfileVersion":3}');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('builds when there is no bundle or no recorded hash', () => {
    expect(webBuildNeeded(root)).toBe(true);
    put('web/dist/index.html', '<html></html>');
    expect(webBuildNeeded(root)).toBe(true);
    recordBuild();
    expect(webBuildNeeded(root)).toBe(false);
    rmSync(path.join(root, 'web/dist/index.html'));
    expect(webBuildNeeded(root)).toBe(true);
  });

  it('skips when only the output changed, builds when a source, the config or the lockfile changed', () => {
    recordBuild();
    put('web/dist/assets/index-abc.js', 'console.log(1)');
    expect(webBuildNeeded(root)).toBe(false);

    put('web/src/main.tsx', 'export const a = 2;');
    expect(webBuildNeeded(root)).toBe(true);
    recordBuild();
    put('web/src/pages/new-page.tsx', 'export {};');
    expect(webBuildNeeded(root)).toBe(true);
    recordBuild();
    put('web/vite.config.ts', 'export default { base: "/x/" };');
    expect(webBuildNeeded(root)).toBe(true);
    recordBuild();
    put('package-lock.json', '{"lockfileVersion":3,"packages":{}}');
    expect(webBuildNeeded(root)).toBe(true);
    recordBuild();
    expect(webBuildNeeded(root)).toBe(false);
  });

  it('a renamed file and another build mode give another hash', () => {
    const before = webInputsHash(root, 'production');
    expect(webInputsHash(root, 'development')).not.toBe(before);
    rmSync(path.join(root, 'web/src/main.tsx'));
    put('web/src/app.tsx', 'export const a = 1;');
    expect(webInputsHash(root, 'production')).not.toBe(before);
  });
});
