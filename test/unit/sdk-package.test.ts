/**
 * The SDK as a user installs it: `npm pack -w @tapline/node` (its `prepack` builds the ESM and
 * CommonJS bundles and their types with tsup), the tarball installed into an empty app, and both
 * builds loaded there by Node itself (`require` from a .cjs file, `import` from a .mjs file), each
 * capturing a real request to a node:http server and delivering it as a gzip batch to a local
 * HTTP receiver standing in for the ingest listener.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let dir = '';
let app = '';
let tarball = '';

/**
 * The app's script: a fake ingest that records each gzip batch, a node:http server wrapped by the
 * SDK, one request to it, a flush, then what the ingest received, printed as JSON.
 */
const script = (load: string) => `${load}
const http = require_('node:http');
const zlib = require_('node:zlib');
async function main() {
  const batches = [];
  const ingest = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        res.end(JSON.stringify({ redactAt: 'client', redactionRules: [], exclusionRules: [], settings: {} }));
        return;
      }
      const body = Buffer.concat(chunks);
      batches.push({
        url: req.url,
        encoding: req.headers['content-encoding'] ?? null,
        auth: req.headers.authorization ?? null,
        body: JSON.parse(zlib.gunzipSync(body).toString('utf8')),
      });
      res.statusCode = 202;
      res.end('{"rejected":[]}');
    });
  });
  await new Promise((r) => ingest.listen(0, '127.0.0.1', r));
  const endpoint = 'http://127.0.0.1:' + ingest.address().port;
  const tapline = new Tapline({ endpoint, bucketSid: 'bkt_package', token: 'tok_package', captureOutgoing: false });
  const host = http.createServer(tapline.httpHandler((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  }));
  await new Promise((r) => host.listen(0, '127.0.0.1', r));
  const answer = await fetch('http://127.0.0.1:' + host.address().port + '/orders/17?x=1');
  await answer.text();
  const flushed = await tapline.flush(10000);
  await tapline.shutdown(5000);
  host.close();
  ingest.close();
  process.stdout.write(JSON.stringify({ sdk: SDK_NAME, version: SDK_VERSION, status: answer.status, flushed, batches }));
}
main().catch((err) => { console.error(err); process.exit(1); });
`;

interface Received {
  sdk: string;
  version: string;
  status: number;
  flushed: boolean;
  batches: {
    url: string;
    encoding: string | null;
    auth: string | null;
    body: { records: Record<string, unknown>[] };
  }[];
}

function run(file: string): Received {
  const out = execFileSync(process.execPath, [file], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  return JSON.parse(out) as Received;
}

function expectDelivered(r: Received): void {
  expect(r.status).toBe(200);
  expect(r.flushed).toBe(true);
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'sdk/node/package.json'), 'utf8')) as {
    version: string;
  };
  expect(r.version).toBe(pkg.version);
  expect(r.sdk).toBe(`tapline-node/${pkg.version}`);
  expect(r.batches).toHaveLength(1);
  const [batch] = r.batches;
  expect(batch!.url).toBe('/v1/buckets/bkt_package/ingest');
  expect(batch!.encoding).toBe('gzip');
  expect(batch!.auth).toBe('Bearer tok_package');
  expect(batch!.body.records).toHaveLength(1);
  const record = batch!.body.records[0] as {
    direction: string;
    request: { method: string; path: string; queryString: Record<string, string> };
    response: { statusCode: number; body?: string };
  };
  expect(record.direction).toBe('in');
  expect(record.request).toMatchObject({ method: 'GET', path: '/orders/17', queryString: { x: '1' } });
  expect(record.response.statusCode).toBe(200);
  expect(record.response.body).toBe('{"ok":true}');
}

describe('@tapline/node as a packed package', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-sdk-package-'));
    const out = execFileSync(npm, ['pack', '-w', '@tapline/node', '--pack-destination', dir, '--json'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The prepack build's own lines come first on stdout, then npm's JSON.
    const packed = JSON.parse(out.slice(out.search(/^\[/m))) as {
      filename: string;
      files: { path: string }[];
    }[];
    tarball = path.join(dir, packed[0]!.filename);
    expect(packed[0]!.files.map((f) => f.path).sort()).toEqual(
      [
        'README.md',
        'dist/index.cjs',
        'dist/index.d.cts',
        'dist/index.d.ts',
        'dist/index.js',
        'package.json',
      ].sort(),
    );
    app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
    // The tarball has no dependencies, so nothing is fetched from a registry.
    execFileSync(npm, ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: app,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }, 120_000);

  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('installs with no dependency of its own and its types for both builds', () => {
    const pkg = JSON.parse(
      fs.readFileSync(path.join(app, 'node_modules/@tapline/node/package.json'), 'utf8'),
    ) as { dependencies?: Record<string, string> };
    expect(pkg.dependencies ?? {}).toEqual({});
    const types = fs.readFileSync(path.join(app, 'node_modules/@tapline/node/dist/index.d.cts'), 'utf8');
    expect(types).toMatch(/class Tapline/);
  });

  it('type-checks a TypeScript app that uses it, as CommonJS and as ESM (strict, nodenext)', () => {
    const use = `const tapline = new Tapline({ endpoint: 'http://127.0.0.1:8081', bucketSid: 'bkt_x', token: 't' });
const handler: (req: IncomingMessage, res: ServerResponse) => void = tapline.httpHandler((_req, res) => res.end());
const done: Promise<boolean> = tapline.flush();
void handler;
void done;
`;
    const imports = `import type { IncomingMessage, ServerResponse } from 'node:http';\n`;
    fs.writeFileSync(
      path.join(app, 'typed.cts'),
      `${imports}import sdk = require('@tapline/node');\nconst { Tapline } = sdk;\n${use}`,
    );
    fs.writeFileSync(
      path.join(app, 'typed.mts'),
      `${imports}import { Tapline } from '@tapline/node';\n${use}`,
    );
    fs.writeFileSync(
      path.join(app, 'wrong.mts'),
      `import { Tapline } from '@tapline/node';\nnew Tapline({ endpoint: 1 });\n`,
    );
    /** tsc's diagnostics (on stdout), '' when the files type-check */
    const tsc = (files: string[]): string => {
      try {
        execFileSync(
          process.execPath,
          [
            path.join(ROOT, 'node_modules/typescript/bin/tsc'),
            ...['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext'],
            ...[
              '--target',
              'es2022',
              '--types',
              'node',
              '--typeRoots',
              path.join(ROOT, 'node_modules/@types'),
            ],
            ...files,
          ],
          { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
        );
        return '';
      } catch (err) {
        return String((err as { stdout?: string }).stdout ?? err);
      }
    };
    expect(tsc(['typed.cts', 'typed.mts'])).toBe('');
    // The types are the SDK's own, not `any`: a wrong option is refused.
    expect(tsc(['wrong.mts'])).toMatch(
      /wrong\.mts\(2,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/,
    );
  }, 60_000);

  it('captures and delivers a request through the CommonJS build (require)', () => {
    fs.writeFileSync(
      path.join(app, 'main.cjs'),
      script(
        `const require_ = require;\nconst { Tapline, SDK_NAME, SDK_VERSION } = require('@tapline/node');`,
      ),
    );
    expectDelivered(run('main.cjs'));
  }, 30_000);

  it('captures and delivers a request through the ESM build (import)', () => {
    fs.writeFileSync(
      path.join(app, 'main.mjs'),
      script(
        `import { createRequire } from 'node:module';\nconst require_ = createRequire(import.meta.url);\nimport { Tapline, SDK_NAME, SDK_VERSION } from '@tapline/node';`,
      ),
    );
    expectDelivered(run('main.mjs'));
  }, 30_000);
});
