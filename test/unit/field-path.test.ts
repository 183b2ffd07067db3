import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFieldPath, type FieldPathResult } from '../../services/shared/rules.js';

const ok = (path: string) => {
  const r = parseFieldPath(path);
  if (!r.ok) throw new Error(`${path}: ${r.error}`);
  return { root: r.root, segments: r.segments };
};
const err = (path: unknown): string => {
  const r: FieldPathResult = parseFieldPath(path);
  if (r.ok) throw new Error(`${String(path)} parsed but should not`);
  return r.error;
};

describe('parseFieldPath: accepted forms', () => {
  it('parses dot keys into a path over both bodies', () => {
    expect(ok('$.a.b')).toEqual({
      root: 'bodies',
      segments: [
        { type: 'key', name: 'a' },
        { type: 'key', name: 'b' },
      ],
    });
    expect(ok('$.password')).toEqual({ root: 'bodies', segments: [{ type: 'key', name: 'password' }] });
    expect(ok('$.user_id-2')).toEqual({ root: 'bodies', segments: [{ type: 'key', name: 'user_id-2' }] });
  });

  it('parses wildcards in both forms and indexes', () => {
    const expected = {
      root: 'bodies',
      segments: [{ type: 'key', name: 'list' }, { type: 'wildcard' }, { type: 'key', name: 'field' }],
    };
    expect(ok('$.list[*].field')).toEqual(expected);
    expect(ok('$.list.*.field')).toEqual(expected);
    expect(ok('$.a[0]')).toEqual({
      root: 'bodies',
      segments: [
        { type: 'key', name: 'a' },
        { type: 'index', index: 0 },
      ],
    });
    expect(ok('$[12].x').segments).toEqual([
      { type: 'index', index: 12 },
      { type: 'key', name: 'x' },
    ]);
  });

  it('parses recursive descent by name, dot or quoted', () => {
    expect(ok('$..password')).toEqual({
      root: 'bodies',
      segments: [{ type: 'recursive', name: 'password' }],
    });
    expect(ok("$..['card number']").segments).toEqual([{ type: 'recursive', name: 'card number' }]);
    expect(ok('$.user..token').segments).toEqual([
      { type: 'key', name: 'user' },
      { type: 'recursive', name: 'token' },
    ]);
  });

  it('parses quoted keys with escapes, in single or double quotes', () => {
    expect(ok("$['quoted key']").segments).toEqual([{ type: 'key', name: 'quoted key' }]);
    expect(ok('$["a.b"]["c]d"]').segments).toEqual([
      { type: 'key', name: 'a.b' },
      { type: 'key', name: 'c]d' },
    ]);
    expect(ok("$['it\\'s']").segments).toEqual([{ type: 'key', name: "it's" }]);
    expect(ok("$['back\\\\slash']").segments).toEqual([{ type: 'key', name: 'back\\slash' }]);
    expect(ok("$['ünïcode ключ']").segments).toEqual([{ type: 'key', name: 'ünïcode ключ' }]);
  });

  it('recognises the record-part roots', () => {
    expect(ok('$.request.body.user.password')).toEqual({
      root: 'request.body',
      segments: [
        { type: 'key', name: 'user' },
        { type: 'key', name: 'password' },
      ],
    });
    expect(ok('$.response.body..token')).toEqual({
      root: 'response.body',
      segments: [{ type: 'recursive', name: 'token' }],
    });
    expect(ok('$.response.body[0].id').root).toBe('response.body');
    expect(ok("$['request']['body'].x").root).toBe('request.body');
    expect(ok('$.request.queryString.apiKey')).toEqual({
      root: 'request.queryString',
      segments: [{ type: 'key', name: 'apiKey' }],
    });
  });

  it('lower-cases header names (they are case-insensitive) and allows a wildcard', () => {
    expect(ok('$.request.headers.Authorization')).toEqual({
      root: 'request.headers',
      segments: [{ type: 'key', name: 'authorization' }],
    });
    expect(ok('$.response.headers.Set-Cookie')).toEqual({
      root: 'response.headers',
      segments: [{ type: 'key', name: 'set-cookie' }],
    });
    expect(ok("$.request.headers['X-Api-Key']").segments).toEqual([{ type: 'key', name: 'x-api-key' }]);
    expect(ok('$.request.headers[*]')).toEqual({ root: 'request.headers', segments: [{ type: 'wildcard' }] });
  });

  it('keeps query-string names as written (they are case-sensitive)', () => {
    expect(ok('$.request.queryString.Token').segments).toEqual([{ type: 'key', name: 'Token' }]);
  });

  it('treats a recursive first step named request as a body key, not a root', () => {
    expect(ok('$..request.body')).toEqual({
      root: 'bodies',
      segments: [
        { type: 'recursive', name: 'request' },
        { type: 'key', name: 'body' },
      ],
    });
  });
});

describe('parseFieldPath: rejected forms', () => {
  it.each([
    ['password', "must start with '$'"],
    ['', "must start with '$'"],
    ['$', 'must address a field'],
    ['$.', 'expected a key name'],
    ['$.a.', 'expected a key name'],
    ['$a', "expected '.', '..' or '['"],
    ['$.a b', "expected '.', '..' or '['"],
    ['$.a[', 'expected a quoted key, an index or *'],
    ['$.a[0', "expected ']'"],
    ['$.a[-1]', 'negative indexes'],
    ['$.a[01]', 'leading zero'],
    ['$.a[99999999]', 'larger than'],
    ['$.a[?(@.x)]', 'expected a quoted key, an index or *'],
    ['$.a[0:2]', "expected ']'"],
    ["$.a['x','y']", "expected ']'"],
    ["$['unterminated]", 'unterminated quoted key'],
    ["$['']", 'must not be empty'],
    ["$['bad\\n']", 'invalid escape'],
    ['$..*', 'recursive descent needs a key name'],
    ['$..[*]', 'recursive descent needs a key name'],
    ['$..[0]', 'recursive descent needs a key name'],
    ['$...a', 'expected a key name'],
    ['$.request', 'must be followed by one of .body, .headers, .queryString'],
    ['$.request.method', 'must be followed by one of'],
    ['$.response.queryString.x', 'must be followed by one of .body, .headers'],
    ['$.request.body', 'must be followed by the field to redact'],
    ['$.request.headers', 'must be followed by the field to redact'],
    ['$.request.headers.cookie.session', 'takes exactly one name'],
    ['$.request.headers..x', 'takes exactly one name'],
    ['$.request.queryString[0]', 'takes exactly one name'],
  ])('%j is an error mentioning %j', (path, message) => {
    expect(err(path)).toContain(message);
  });

  it('rejects non-strings, over-long paths and too many segments', () => {
    expect(err(42)).toBe('must be a string');
    expect(err(null)).toBe('must be a string');
    expect(err('$.' + 'a'.repeat(1100))).toContain('at most 1024 characters');
    expect(err('$' + '.a'.repeat(33))).toContain('more than 32 segments');
    expect(ok('$' + '.a'.repeat(32)).segments).toHaveLength(32);
  });

  it('rejects control characters inside quoted keys', () => {
    expect(err("$['a\u0001b']")).toContain('control character');
  });
});

describe('parseFieldPath: properties', () => {
  it('never throws, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const r = parseFieldPath(s);
        expect(typeof r.ok).toBe('boolean');
        const r2 = parseFieldPath('$' + s);
        expect(typeof r2.ok).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips any key through the quoted form', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 30 }).filter((s) => [...s].every((c) => c >= ' ')),
        (key) => {
          const quoted = `$['${key.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}']`;
          const r = parseFieldPath(quoted);
          if (['request', 'response'].includes(key)) return; // reserved record-part names
          expect(r).toEqual({ ok: true, root: 'bodies', segments: [{ type: 'key', name: key }] });
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('parseFieldPath: prototype names', () => {
  it('treats constructor / __proto__ / toString as plain keys', () => {
    expect(ok('$.constructor')).toEqual({ root: 'bodies', segments: [{ type: 'key', name: 'constructor' }] });
    expect(ok('$.__proto__.x').root).toBe('bodies');
    expect(err('$.request.toString.x')).toContain('must be followed by one of');
  });
});

describe('parseFieldPath: the forms the Node.js SDK compiles with it', () => {
  it('parses quoted keys, indexes, wildcards and recursive names; refuses a bare $ and a path without $', () => {
    expect(ok("$['a key'].b[0].*")).toEqual({
      root: 'bodies',
      segments: [
        { type: 'key', name: 'a key' },
        { type: 'key', name: 'b' },
        { type: 'index', index: 0 },
        { type: 'wildcard' },
      ],
    });
    expect(ok('$..x-api-key')).toEqual({
      root: 'bodies',
      segments: [{ type: 'recursive', name: 'x-api-key' }],
    });
    expect(err('$')).toContain('must address a field');
    expect(err('a.b')).toContain("must start with '$'");
  });
});
