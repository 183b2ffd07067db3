import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCriteria, likePattern, tokenize } from '../../services/api/requests/criteria.compiler.js';
import { AppError } from '../../services/shared/errors.js';

function compileError(text: string): AppError {
  try {
    compileCriteria(text, { field: 'querystring.q' });
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(text)} to fail`);
}

/** Every word the compiler may put in SQL: columns, functions, keywords. */
const SQL_WORDS = new Set([
  'method',
  'status_code',
  'path',
  'endpoint',
  'duration',
  'environment_sid',
  'host',
  'direction',
  'context_sid',
  'tags',
  'blocked',
  'AND',
  'OR',
  'NOT',
  'LIKE',
  'ILIKE',
  'ifNull',
  'lower',
  'mapContains',
  'positionCaseInsensitiveUTF8',
]);

/** The SQL with placeholders removed may hold only allowed words, operators, parentheses and 0/1. */
function assertSafeSql(sql: string, params: Record<string, unknown>): void {
  const placeholders = [...sql.matchAll(/\{([a-z]+\d+):(String|UInt16|Float64|UInt8)\}/g)];
  for (const m of placeholders) expect(params).toHaveProperty(m[1]!);
  const rest = sql.replace(/\{[a-z]+\d+:(String|UInt16|Float64|UInt8)\}/g, ' ');
  expect(rest).toMatch(/^[A-Za-z_0-9 ()<>=!,[\]]*$/);
  for (const word of rest.match(/[A-Za-z_][A-Za-z_0-9]*/g) ?? []) expect(SQL_WORDS).toContain(word);
  for (const num of rest.match(/\b\d+\b/g) ?? []) expect(['0', '1']).toContain(num);
}

describe('compileCriteria', () => {
  it('compiles the example of the issue to AND-ed, parameterised conditions', () => {
    const { sql, params } = compileCriteria('method:POST status:>=500 path:/api/* duration:>250 env:prod1');
    expect(sql).toBe(
      '(method = {c0:String}) AND (status_code >= {c1:UInt16}) AND (path LIKE {c2:String}) AND ' +
        '(ifNull(duration > {c3:Float64}, 0)) AND (environment_sid = {c4:String})',
    );
    expect(params).toEqual({ c0: 'POST', c1: 500, c2: '/api/%', c3: 250, c4: 'prod1' });
  });

  it('handles status forms: exact, class, comparison, range, alternatives', () => {
    expect(compileCriteria('status:404').params).toEqual({ c0: 404 });
    expect(compileCriteria('status:5xx').params).toEqual({ c0: 500, c1: 599 });
    expect(compileCriteria('status:4XX').params).toEqual({ c0: 400, c1: 499 });
    expect(compileCriteria('status:50x').params).toEqual({ c0: 500, c1: 509 });
    expect(compileCriteria('status:<400').sql).toBe('(status_code < {c0:UInt16})');
    expect(compileCriteria('status:200..299').sql).toBe(
      '(status_code >= {c0:UInt16} AND status_code <= {c1:UInt16})',
    );
    const alt = compileCriteria('status:500,502');
    expect(alt.sql).toBe('((status_code = {c0:UInt16}) OR (status_code = {c1:UInt16}))');
    expect(alt.params).toEqual({ c0: 500, c1: 502 });
  });

  it('handles duration units and ranges, NULL durations staying out unless negated', () => {
    expect(compileCriteria('duration:>=1.5s').params).toEqual({ c0: 1500 });
    expect(compileCriteria('duration:<20ms').params).toEqual({ c0: 20 });
    expect(compileCriteria('duration:10..20').sql).toBe(
      '(ifNull(duration >= {c0:Float64} AND duration <= {c1:Float64}, 0))',
    );
    expect(compileCriteria('-duration:>100').sql).toBe('NOT (ifNull(duration > {c0:Float64}, 0))');
  });

  it('negates, quotes, and searches bare words in the path', () => {
    const { sql, params } = compileCriteria('-method:get path:"/a b/*" users "two words"');
    expect(sql).toBe(
      'NOT (method = {c0:String}) AND (path LIKE {c1:String}) AND ' +
        '(positionCaseInsensitiveUTF8(path, {c2:String}) > 0) AND (positionCaseInsensitiveUTF8(path, {c3:String}) > 0)',
    );
    expect(params).toEqual({ c0: 'GET', c1: '/a b/%', c2: 'users', c3: 'two words' });
    expect(compileCriteria('path:"say \\"hi\\""').params).toEqual({ c0: 'say "hi"' });
  });

  it('covers every other field', () => {
    const { sql, params } = compileCriteria(
      'endpoint:/users/{id} host:API.example.com host:*.example.com direction:OUT context:ctx1 ' +
        'tag:team=core tag:flag tag:ver=v1* blocked:true blocked:FALSE env:prod01,stag01',
    );
    expect(sql).toContain('endpoint = {c0:String}');
    expect(sql).toContain('lower(host) = {c1:String}');
    expect(sql).toContain('host ILIKE {c2:String}');
    expect(sql).toContain('mapContains(tags, {c5:String}) AND tags[{c5:String}] = {c6:String}');
    expect(sql).toContain('(mapContains(tags, {c7:String}))');
    expect(sql).toContain('tags[{c8:String}] LIKE {c9:String}');
    expect(params).toMatchObject({
      c1: 'api.example.com',
      c2: '%.example.com',
      c3: 'out',
      c4: 'ctx1',
      c10: 1,
      c11: 0,
      c12: 'prod01',
      c13: 'stag01',
    });
    assertSafeSql(sql, params);
  });

  it('matches everything on empty criteria and uses the prefix it is given', () => {
    expect(compileCriteria('   ')).toEqual({ sql: '1', params: {} });
    expect(compileCriteria('status:500', { paramPrefix: 'sv' })).toEqual({
      sql: '(status_code = {sv0:UInt16})',
      params: { sv0: 500 },
    });
  });

  it('escapes LIKE metacharacters in wildcard patterns', () => {
    expect(likePattern('/a_b%c\\d/*')).toBe('/a\\_b\\%c\\\\d/%');
    expect(compileCriteria('path:/100%_off/*').params).toEqual({ c0: '/100\\%\\_off/%' });
  });

  it('rejects bad input with a 400 naming the problem', () => {
    const unknown = compileError('method:GET colour:red');
    expect(unknown.status).toBe(400);
    expect(unknown.code).toBe('VALIDATION_ERROR');
    expect(unknown.message).toContain('"colour"');
    expect(unknown.details['querystring.q']).toContain('colour');
    expect(compileError('x_y:1').message).toContain('"x_y"');
    expect(compileError('status:abc').message).toContain('Invalid status');
    expect(compileError('status:300..200').message).toContain('reversed');
    expect(compileError('duration:>fast').message).toContain('Invalid duration');
    expect(compileError('direction:sideways').message).toContain('in or out');
    expect(compileError('blocked:maybe').message).toContain('true or false');
    expect(compileError('method:G;ET').message).toContain('Invalid method');
    expect(compileError('path:"unterminated').message).toContain('Unterminated quote');
    expect(compileError('path:"a"b').message).toContain('after the quoted value');
    expect(compileError('status:').message).toContain('needs a value');
    expect(compileError('tag:=x').message).toContain('tag needs a key');
    expect(compileError('- path:/x').message).toContain('"-"');
    expect(compileError('a '.repeat(51)).message).toContain('more than 50 terms');
    expect(compileError('x'.repeat(4097)).message).toContain('longer than');
  });

  it('keeps SQL-injection attempts in parameters', () => {
    const attempts = [
      "'; DROP TABLE requests; --",
      'path:"/x\') OR 1=1 --"',
      'method:GET) OR (1=1',
      "env:prod1' OR '1'='1",
      'tag:a}=b{c0:String}',
      'host:{c0:String}',
      'context:x/**/UNION/**/SELECT',
      '"\\\\\' ; SELECT * FROM system.tables"',
      'path:/a\\%_*',
      'endpoint:`x`',
    ];
    for (const text of attempts) {
      let compiled;
      try {
        compiled = compileCriteria(text);
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        expect((err as AppError).status).toBe(400);
        continue;
      }
      assertSafeSql(compiled.sql, compiled.params);
      expect(compiled.sql).not.toMatch(/['";`\\]|--|\/\*|UNION|SELECT|DROP|system/);
    }
    expect(compileCriteria('host:{c0:String}').params).toEqual({ c0: '{c0:string}' });
  });

  it('tokenizes quoted values with escapes and keeps colons after the first in the value', () => {
    expect(tokenize('path:/a:b -"x y"')).toEqual([
      { negated: false, field: 'path', value: '/a:b', quoted: false, position: 0 },
      { negated: true, field: null, value: 'x y', quoted: true, position: 10 },
    ]);
  });
});

describe('compileCriteria properties', () => {
  const isOnly400 = (text: string) => {
    try {
      const { sql, params } = compileCriteria(text);
      assertSafeSql(sql, params);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 400 || err.code !== 'VALIDATION_ERROR') throw err;
    }
  };

  it('never throws anything but a 400 AppError and never emits unsafe SQL, on any text', () => {
    fc.assert(fc.property(fc.string({ maxLength: 300 }), isOnly400), { numRuns: 2000 });
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), isOnly400), { numRuns: 1000 });
  });

  it('on term-shaped input, user values reach params only, never the SQL', () => {
    const field = fc.constantFrom(
      'method',
      'status',
      'path',
      'endpoint',
      'duration',
      'env',
      'host',
      'direction',
      'context',
      'tag',
      'blocked',
      'bogus',
    );
    // A marker no SQL word contains, followed by arbitrary characters.
    const value = fc.string({ maxLength: 30 }).map((s) => `zq${s}`);
    const term = fc
      .tuple(fc.boolean(), field, value, fc.boolean())
      .map(
        ([neg, f, v, quote]) =>
          `${neg ? '-' : ''}${f}:${quote ? `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"` : v.replace(/\s/g, '')}`,
      );
    const text = fc
      .array(
        fc.oneof(
          term,
          value.map((v) => v.replace(/\s/g, '')),
        ),
        { maxLength: 8 },
      )
      .map((ts) => ts.join(' '));
    fc.assert(
      fc.property(text, (t) => {
        try {
          const { sql, params } = compileCriteria(t);
          expect(sql).not.toContain('zq');
          assertSafeSql(sql, params);
        } catch (err) {
          if (!(err instanceof AppError) || err.status !== 400) throw err;
        }
      }),
      { numRuns: 2000 },
    );
  });
});
