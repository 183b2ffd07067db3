import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testStackMode } from '../helpers/stack-mode.js';

describe('test stack mode (TEST_STACK)', () => {
  it('follows TEST_STACK when set, and refuses an unknown value', () => {
    expect(testStackMode({ TEST_STACK: 'local', DOCKER_HOST: 'tcp://x:2375' }).mode).toBe('local');
    expect(testStackMode({ TEST_STACK: 'containers' }).mode).toBe('containers');
    expect(() => testStackMode({ TEST_STACK: 'docker' })).toThrow(/containers or local/);
  });

  it('chooses containers when a Docker engine is named, local otherwise', () => {
    expect(testStackMode({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' })).toEqual({
      mode: 'containers',
      why: 'DOCKER_HOST=unix:///run/user/1000/docker.sock',
    });
    // This machine has no Docker socket (the suite itself runs the local stack here).
    expect(testStackMode({}).mode).toBe(fs.existsSync('/var/run/docker.sock') ? 'containers' : 'local');
  });
});
