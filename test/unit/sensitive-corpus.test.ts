import { describe, expect, it } from 'vitest';
import { isSecretKey } from '../../services/processor/sensitive/detectors.js';
import {
  compileSensitiveRules,
  predefinedTypes,
  PREDEFINED_TYPES,
  redactSensitive,
  SensitivePatternError,
  SensitiveRuleError,
  validateSensitiveRule,
  type Level,
  type SensitiveRuleInput,
  type SensitiveTarget,
} from '../../services/processor/sensitive/index.js';

/**
 * The corpus of issue 15: records with secrets planted in every scope and body type, the expected
 * output of each predefined type and level written out by hand; every secret is redacted and
 * nothing else changes (other bytes of a body included); look-alikes stay.
 */

const all = (level: Level, scopes: SensitiveRuleInput['scopes'] = ['*']) =>
  compileSensitiveRules(PREDEFINED_TYPES.map((type, i) => ({ sid: `r${i}`, type, level, scopes })));

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';

function textRecord(body: string): SensitiveTarget {
  return {
    request: { method: 'POST', path: '/t', body, contentType: 'text/plain', size: body.length },
    response: null,
  };
}

/** Runs one predefined type at one level over `before <secret> after` in a text body. */
function one(type: string, level: Level, secret: string): string {
  const c = compileSensitiveRules([{ sid: 'x', type, level, scopes: ['request.body'] }]);
  return redactSensitive(textRecord(`before ${secret} after`), c).record.request.body as string;
}

describe('each predefined value type at each level, by hand', () => {
  const table: [string, string, string, string][] = [
    // type, secret, mask, partial
    ['email', 'jane.doe@example.com', '****.***@*******.***', '****.***@example.com'],
    ['card', '4111 1111 1111 1111', '**** **** **** ****', '**** **** **** 1111'],
    ['card', '5500-0000-0000-0004', '****-****-****-****', '****-****-****-0004'],
    ['card', '378282246310005', '***************', '***********0005'],
    ['ssn', '123-45-6789', '***-**-****', '***-**-6789'],
    ['phone', '+44 20 7946 0958', '+** ** **** ****', '+** ** **** **58'],
    ['phone', '(415) 555-2671', '(***) ***-****', '(***) ***-**71'],
    ['phone', '06 12 34 56 78', '** ** ** ** **', '** ** ** ** 78'],
    ['ipv4', '203.0.113.42', '***.*.***.**', '203.0.113.**'],
    ['ipv6', '2001:db8:85a3::8a2e:370:7334', '****:***:****::****:***:****', '2001:db8:85a3::****:***:****'],
    [
      'jwt',
      JWT,
      '********************.***************************.**********************_********************',
      'eyJhbGciOiJIUzI1NiJ9.***************************.**********************_********************',
    ],
    ['authorization', 'Bearer abc123def456ghi', '****** ***************', 'Bearer ***************'],
    [
      'authorization',
      'Basic dXNlcjpwYXNzd29yZA==',
      '***** ******************==',
      'Basic ******************==',
    ],
    [
      'api_key',
      'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
      '**_****_************************',
      'sk_live_************************',
    ],
    ['api_key', 'AKIAIOSFODNN7EXAMPLE', '********************', 'AKIA****************'],
    [
      'api_key',
      'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
      '***_************************************',
      'ghp_************************************',
    ],
    [
      'api_key',
      'xoxb-123456789012-abcdefABCDEF',
      '****-************-************',
      'xoxb-************-************',
    ],
    ['iban', 'DE89 3704 0044 0532 0130 00', '**** **** **** **** **** **', 'DE** **** **** **** **30 00'],
    ['iban', 'GB29NWBK60161331926819', '**********************', 'GB****************6819'],
  ];
  for (const [type, secret, mask, partial] of table) {
    it(`${type}: ${secret}`, () => {
      expect(one(type, 'full', secret)).toBe(`before [REDACTED:${type}] after`);
      expect(one(type, 'mask', secret)).toBe(`before ${mask} after`);
      expect(one(type, 'partial', secret)).toBe(`before ${partial} after`);
    });
  }

  it('password-like keys: full and partial replace the value, mask keeps its length', () => {
    const body = 'user=jane&password=hunter2&remember=1';
    const rec = (b: string): SensitiveTarget => ({
      request: { body: b, contentType: 'application/x-www-form-urlencoded' },
    });
    const run = (level: Level) =>
      redactSensitive(rec(body), compileSensitiveRules([{ sid: 'p', type: 'password', level }])).record
        .request.body;
    expect(run('full')).toBe('user=jane&password=[REDACTED:password]&remember=1');
    expect(run('partial')).toBe('user=jane&password=[REDACTED:password]&remember=1');
    expect(run('mask')).toBe('user=jane&password=*******&remember=1');
  });
  it('cookie headers claimed by the password key rule read [REDACTED:cookie]; other keys keep password', () => {
    const rec: SensitiveTarget = {
      request: {
        method: 'GET',
        path: '/t',
        headers: { Cookie: 'sid=abc123; theme=dark', 'X-Api-Key': 'k1' },
      },
      response: { statusCode: 200, headers: { 'set-cookie': ['sid=abc123; HttpOnly', 'a=b'] } },
    };
    for (const level of ['full', 'partial'] as const) {
      const out = redactSensitive(rec, compileSensitiveRules([{ sid: 'p', type: 'password', level }]));
      expect(out.record.request.headers, level).toEqual({
        Cookie: '[REDACTED:cookie]',
        'X-Api-Key': '[REDACTED:password]',
      });
      expect(out.record.response?.headers, level).toEqual({
        'set-cookie': ['[REDACTED:cookie]', '[REDACTED:cookie]'],
      });
    }
  });
});

describe('the corpus: every scope and body type, all predefined types, level full', () => {
  const c = all('full');

  it('JSON text body at depth, in arrays, numbers; headers; query object; URL and path', () => {
    const body =
      '{"order":{"id":"ORD-20261125-000123","createdAt":1732518826000,"ref":"550e8400-e29b-41d4-a716-446655440000",' +
      '"payer":{"contact":{"email":"jane.doe@example.com","phones":["+14155552671","not a phone"]},' +
      '"card":{"number":"4111 1111 1111 1111","fake":"4111111111111112"},"iban":"DE89370400440532013000"},' +
      '"items":[{"sku":"A-1","n":4111111111111111},{"note":"ship to 203.0.113.7 or 2001:db8::1"}],' +
      '"auth":{"password":"hunter2","api_key":"k-123","token_type":"Bearer"}},' +
      '"ssn": "123-45-6789", "total": 4999}';
    const expected =
      '{"order":{"id":"ORD-20261125-000123","createdAt":1732518826000,"ref":"550e8400-e29b-41d4-a716-446655440000",' +
      '"payer":{"contact":{"email":"[REDACTED:email]","phones":["[REDACTED:phone]","not a phone"]},' +
      '"card":{"number":"[REDACTED:card]","fake":"4111111111111112"},"iban":"[REDACTED:iban]"},' +
      '"items":[{"sku":"A-1","n":"[REDACTED:card]"},{"note":"ship to [REDACTED:ipv4] or [REDACTED:ipv6]"}],' +
      '"auth":{"password":"[REDACTED:password]","api_key":"[REDACTED:password]","token_type":"Bearer"}},' +
      '"ssn": "[REDACTED:ssn]", "total": 4999}';
    const record = {
      sid: 'req_1',
      environmentSid: 'prod01',
      request: {
        method: 'POST',
        host: 'api.example.com',
        url: 'https://api.example.com/v1/users/jane.doe@example.com/orders?email=bob%40example.com&page=2&access_token=abc123&sort=desc',
        path: '/v1/users/jane.doe@example.com/orders?email=bob%40example.com&page=2&access_token=abc123&sort=desc',
        queryString: { email: 'bob@example.com', page: '2', access_token: 'abc123', sort: 'desc' },
        headers: {
          authorization: 'Bearer abc123def456ghi',
          'x-api-key': 'k_1234567890',
          'x-forwarded-for': '203.0.113.7, 10.0.0.1',
          'x-request-id': '550e8400-e29b-41d4-a716-446655440000',
          'x-trace': `session ${JWT}`,
          accept: 'application/json',
          'content-type': 'application/json',
        },
        body,
        size: 9999,
      },
      response: {
        statusCode: 201,
        headers: {
          'set-cookie': 'sid=s3cr3t; HttpOnly',
          'x-support': 'mail support@example.com or call (415) 555-2671',
          date: 'Wed, 25 Nov 2026 06:13:46 GMT',
        },
        body: '{"ok":true,"stripe":"sk_live_4eC39HqLyjWDarjtT1zdp7dc","aws":["AKIAIOSFODNN7EXAMPLE"]}',
        contentType: 'application/json',
        size: 1234,
      },
      timings: { duration: 12 },
    };
    const snapshot = structuredClone(record);
    const res = redactSensitive(record, c);
    expect(record).toEqual(snapshot); // the input is not mutated
    expect(res.redacted).toBe(true);
    expect(res.record).toEqual({
      sid: 'req_1',
      environmentSid: 'prod01',
      request: {
        method: 'POST',
        host: 'api.example.com',
        url: 'https://api.example.com/v1/users/[REDACTED:email]/orders?email=[REDACTED:email]&page=2&access_token=[REDACTED:password]&sort=desc',
        path: '/v1/users/[REDACTED:email]/orders?email=[REDACTED:email]&page=2&access_token=[REDACTED:password]&sort=desc',
        queryString: {
          email: '[REDACTED:email]',
          page: '2',
          access_token: '[REDACTED:password]',
          sort: 'desc',
        },
        headers: {
          authorization: '[REDACTED:authorization]',
          'x-api-key': '[REDACTED:password]',
          'x-forwarded-for': '[REDACTED:ipv4], [REDACTED:ipv4]',
          'x-request-id': '550e8400-e29b-41d4-a716-446655440000',
          'x-trace': 'session [REDACTED:jwt]',
          accept: 'application/json',
          'content-type': 'application/json',
        },
        body: expected,
        size: 9999,
      },
      response: {
        statusCode: 201,
        headers: {
          'set-cookie': '[REDACTED:cookie]',
          'x-support': 'mail [REDACTED:email] or call [REDACTED:phone]',
          date: 'Wed, 25 Nov 2026 06:13:46 GMT',
        },
        body: '{"ok":true,"stripe":"[REDACTED:api_key]","aws":["[REDACTED:api_key]"]}',
        contentType: 'application/json',
        size: 1234,
      },
      timings: { duration: 12 },
    });
    expect(res.changes).toEqual([
      { scope: 'request.headers', path: 'authorization', type: 'authorization' },
      { scope: 'request.headers', path: 'x-api-key', type: 'password' },
      { scope: 'request.headers', path: 'x-forwarded-for', type: 'ipv4' },
      { scope: 'request.headers', path: 'x-trace', type: 'jwt' },
      { scope: 'request.query', path: 'email', type: 'email' },
      { scope: 'request.query', path: 'access_token', type: 'password' },
      { scope: 'request.url', path: 'url', type: 'email' },
      { scope: 'request.url', path: 'path', type: 'email' },
      { scope: 'request.body', path: '$.order.payer.contact.email', type: 'email' },
      { scope: 'request.body', path: '$.order.payer.contact.phones[0]', type: 'phone' },
      { scope: 'request.body', path: '$.order.payer.card.number', type: 'card' },
      { scope: 'request.body', path: '$.order.payer.iban', type: 'iban' },
      { scope: 'request.body', path: '$.order.items[0].n', type: 'card' },
      { scope: 'request.body', path: '$.order.items[1].note', type: 'ipv4' },
      { scope: 'request.body', path: '$.order.items[1].note', type: 'ipv6' },
      { scope: 'request.body', path: '$.order.auth.password', type: 'password' },
      { scope: 'request.body', path: '$.order.auth.api_key', type: 'password' },
      { scope: 'request.body', path: '$.ssn', type: 'ssn' },
      { scope: 'response.headers', path: 'set-cookie', type: 'password' },
      { scope: 'response.headers', path: 'x-support', type: 'email' },
      { scope: 'response.headers', path: 'x-support', type: 'phone' },
      { scope: 'response.body', path: '$.stripe', type: 'api_key' },
      { scope: 'response.body', path: '$.aws[0]', type: 'api_key' },
    ]);
  });

  it('JSON body given as an object (copied, not mutated), with a password key holding an object', () => {
    const body = {
      users: [
        { name: 'Jane', email: 'jane@example.com', secret: { q: 'pet', a: 'rex' } },
        { name: 'Bob', ssn: '078 05 1120', pin: 1234 },
      ],
      count: 2,
    };
    const record = { request: { body }, response: { statusCode: 200, body: null } };
    const res = redactSensitive(record, c);
    expect(res.record.request.body).toEqual({
      users: [
        { name: 'Jane', email: '[REDACTED:email]', secret: '[REDACTED:password]' },
        { name: 'Bob', ssn: '[REDACTED:ssn]', pin: '[REDACTED:password]' },
      ],
      count: 2,
    });
    expect(body.users[0]!.email).toBe('jane@example.com');
    expect(res.record.response).toBe(record.response);
  });

  it('form body (application/x-www-form-urlencoded): names and decoded values', () => {
    const body =
      'name=Jane+Doe&email=jane.doe%40example.com&card=4111-1111-1111-1111&pwd=s3cret%21&note=hello+world';
    const res = redactSensitive(
      { request: { body, contentType: 'application/x-www-form-urlencoded; charset=utf-8' } },
      c,
    );
    expect(res.record.request.body).toBe(
      'name=Jane+Doe&email=[REDACTED:email]&card=[REDACTED:card]&pwd=[REDACTED:password]&note=hello+world',
    );
    expect(res.changes.map((x) => `${x.scope} ${x.path} ${x.type}`)).toEqual([
      'request.body email email',
      'request.body card card',
      'request.body pwd password',
    ]);
  });

  it('XML body: elements, attributes, CDATA, entities; every other byte kept', () => {
    const body =
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<!-- customer export -->\n' +
      '<customer id="C-1001" contact="jane.doe@example.com">\n' +
      '  <name>Jane &amp; John</name>\n' +
      '  <ns:Password>hunter2</ns:Password>\n' +
      '  <payment><card type="visa">4111 1111 1111 1111</card><iban>GB29 NWBK 6016 1331 9268 19</iban></payment>\n' +
      '  <notes><![CDATA[call +44 20 7946 0958 <urgent>]]></notes>\n' +
      '  <auth token="abc&amp;def"/>\n' +
      '  <ip>2001:db8:85a3:0:0:8a2e:370:7334</ip>\n' +
      '</customer>\n';
    const expected =
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<!-- customer export -->\n' +
      '<customer id="C-1001" contact="[REDACTED:email]">\n' +
      '  <name>Jane &amp; John</name>\n' +
      '  <ns:Password>[REDACTED:password]</ns:Password>\n' +
      '  <payment><card type="visa">[REDACTED:card]</card><iban>[REDACTED:iban]</iban></payment>\n' +
      '  <notes><![CDATA[call [REDACTED:phone] <urgent>]]></notes>\n' +
      '  <auth token="[REDACTED:password]"/>\n' +
      '  <ip>[REDACTED:ipv6]</ip>\n' +
      '</customer>\n';
    const res = redactSensitive({ request: {}, response: { body, contentType: 'application/xml' } }, c);
    expect(res.record.response!.body).toBe(expected);
    expect(res.changes.map((x) => `${x.path} ${x.type}`)).toEqual([
      '/customer/@contact email',
      '/customer/ns:Password password',
      '/customer/payment/card card',
      '/customer/payment/iban iban',
      '/customer/notes phone',
      '/customer/auth/@token password',
      '/customer/ip ipv6',
    ]);
  });

  it('plain text body: values and name=value / name: value pairs', () => {
    const body =
      'Login failed for jane.doe@example.com from 203.0.113.9\n' +
      'password=hunter2 retry=3\n' +
      'Authorization: Bearer abc123def456ghi\n' +
      '"client_secret": "s3cr3t-value", iban GB29 NWBK 6016 1331 9268 19\n';
    const res = redactSensitive(textRecord(body), c);
    expect(res.record.request.body).toBe(
      'Login failed for [REDACTED:email] from [REDACTED:ipv4]\n' +
        'password=[REDACTED:password] retry=3\n' +
        'Authorization: [REDACTED:authorization]\n' +
        '"client_secret": "[REDACTED:password]", iban [REDACTED:iban]\n',
    );
  });

  it('a body invalid in its declared type is scanned as text', () => {
    const json = '{"email": "jane@example.com", "password": "hunter2", broken';
    const xml = '<a><b>jane@example.com</a>';
    const r1 = redactSensitive({ request: { body: json, contentType: 'application/json' } }, c);
    expect(r1.record.request.body).toBe(
      '{"email": "[REDACTED:email]", "password": "[REDACTED:password]", broken',
    );
    const r2 = redactSensitive({ request: { body: xml, contentType: 'text/xml' } }, c);
    expect(r2.record.request.body).toBe('<a><b>[REDACTED:email]</a>');
    expect(r2.changes).toEqual([{ scope: 'request.body', path: '$', type: 'email' }]);
  });

  it('JSON text with escapes is decoded before scanning', () => {
    const body = '{"e":"jane\\u0040example.com","pass\\u0077ord":"x","k":"ok\\/fine"}';
    const res = redactSensitive({ request: { body, contentType: 'application/json' } }, c);
    expect(res.record.request.body).toBe(
      '{"e":"[REDACTED:email]","pass\\u0077ord":"[REDACTED:password]","k":"ok\\/fine"}',
    );
  });

  it('scopes limit where a rule looks', () => {
    const only = compileSensitiveRules([
      { sid: 'e', type: 'email', level: 'full', scopes: ['response.body'] },
    ]);
    const record = {
      request: { headers: { from: 'jane@example.com' }, body: 'jane@example.com' },
      response: { body: 'jane@example.com' },
    };
    const res = redactSensitive(record, only);
    expect(res.record.request).toBe(record.request);
    expect(res.record.response!.body).toBe('[REDACTED:email]');
  });
});

describe('false positives: nothing else changes', () => {
  it('order ids, timestamps, UUIDs, 16-digit numbers failing Luhn, versions, dates, prices stay', () => {
    const body = JSON.stringify({
      orderId: 'ORD-4111-1111-1111-1112',
      orderNumber: 4111111111111112,
      invoice: '1234567812345678',
      createdAt: 1732518826000,
      createdAtUs: '1732518826000123',
      isoTime: '2026-11-25T06:13:46.123Z',
      date: '25/11/2026 06:13',
      uuid: '550e8400-e29b-41d4-a716-446655440000',
      sha: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      version: 'v1.2.3.4',
      userAgent: 'Mozilla/5.0 Chrome/126.0.6478.127 Safari/537.36',
      price: 1234.56,
      qty: 12,
      sku: 'DE12ABCD',
      mac: '00:1A:2B:3C:4D:5E',
      time: '12:30:45',
      zip: '94107-1234',
      tokenType: 'Bearer',
      text: 'Basic authentication is weak; the bearer token is short',
    });
    const record = {
      request: {
        body,
        contentType: 'application/json',
        headers: { 'x-request-id': '550e8400-e29b-41d4-a716-446655440000' },
      },
      response: { body: 'ok 4111111111111112 1732518826000', contentType: 'text/plain' },
    };
    for (const level of ['full', 'mask', 'partial'] as const) {
      const res = redactSensitive(record, all(level));
      expect(res.changes).toEqual([]);
      expect(res.redacted).toBe(false);
      expect(res.record).toBe(record);
    }
  });
});

describe('custom types', () => {
  it('applyTo key finds JSON properties, XML elements/attributes, headers and parameters at any depth', () => {
    const c = compileSensitiveRules([
      { sid: 'k', type: 'customer-ref', pattern: '^(?i)cust(omer)?_?ref$', applyTo: 'key', level: 'full' },
    ]);
    const res = redactSensitive(
      {
        request: {
          headers: { Customer_Ref: 'C-1' },
          queryString: { custref: 'C-2' },
          url: '/x?custRef=C-3&a=1',
          body: '{"a":[{"b":{"customerRef":"C-4","other":"C-5"}}]}',
          contentType: 'application/json',
        },
        response: {
          body: '<r custRef="C-6"><customer_ref>C-7</customer_ref><x>C-8</x></r>',
          contentType: 'text/xml',
        },
      },
      c,
    );
    expect(res.record.request).toEqual({
      headers: { Customer_Ref: '[REDACTED:customer-ref]' },
      queryString: { custref: '[REDACTED:customer-ref]' },
      url: '/x?custRef=[REDACTED:customer-ref]&a=1',
      body: '{"a":[{"b":{"customerRef":"[REDACTED:customer-ref]","other":"C-5"}}]}',
      contentType: 'application/json',
    });
    expect(res.record.response!.body).toBe(
      '<r custRef="[REDACTED:customer-ref]"><customer_ref>[REDACTED:customer-ref]</customer_ref><x>C-8</x></r>',
    );
  });

  it('applyTo value finds text anywhere, each level', () => {
    const rule = (level: Level) =>
      compileSensitiveRules([
        { sid: 'v', type: 'employee', pattern: 'EMP-[0-9]{6}', applyTo: 'value', level },
      ]);
    const record = { request: { headers: { 'x-emp': 'EMP-123456' }, body: 'by EMP-654321.' } };
    expect(redactSensitive(record, rule('full')).record.request).toEqual({
      headers: { 'x-emp': '[REDACTED:employee]' },
      body: 'by [REDACTED:employee].',
    });
    expect(redactSensitive(record, rule('mask')).record.request.body).toBe('by ***-******.');
    expect(redactSensitive(record, rule('partial')).record.request.body).toBe('by ***-**4321.');
  });

  it('refuses a pattern RE2 cannot compile with a typed error naming it and the position', () => {
    const bad = (pattern: string) => {
      try {
        validateSensitiveRule({ sid: 'b', type: 'x', pattern, applyTo: 'value', level: 'full' });
      } catch (err) {
        return err;
      }
      throw new Error(`accepted ${pattern}`);
    };
    const e1 = bad('ab(c') as SensitivePatternError;
    expect(e1).toBeInstanceOf(SensitivePatternError);
    expect(e1.pattern).toBe('ab(c');
    expect(e1.position).toBe(2);
    expect(e1.message).toContain('missing closing )');
    const e2 = bad('foo(?=bar)') as SensitivePatternError;
    expect(e2.position).toBe(3);
    expect(e2.toDetails()).toMatchObject({ pattern: 'foo(?=bar)', position: 3 });
    const e3 = bad('(a)\\1') as SensitivePatternError;
    expect(e3.position).toBe(3);
    expect(bad('')).toBeInstanceOf(SensitivePatternError);
    expect(() => validateSensitiveRule({ sid: 'b', type: 'x', pattern: 'a', level: 'full' })).toThrow(
      SensitiveRuleError,
    );
    expect(() => validateSensitiveRule({ sid: 'b', type: 'email', level: 'loud' as Level })).toThrow(/level/);
    expect(() =>
      validateSensitiveRule({ sid: 'b', type: 'email', level: 'full', scopes: ['request.cookies' as never] }),
    ).toThrow(/scope/);
  });

  it('skips disabled, deleted and broken rules when compiling, reporting the broken', () => {
    const c = compileSensitiveRules([
      { sid: 'a', type: 'email', level: 'full', enabled: false },
      { sid: 'b', type: 'email', level: 'full', deletedAt: '2026-11-25T00:00:00Z' },
      { sid: 'c', type: 'x', pattern: '(', applyTo: 'value', level: 'full' },
    ]);
    expect(c.size).toBe(0);
    expect(c.errors.map((e) => e.sid)).toEqual(['c']);
    const record = { request: { body: 'jane@example.com' } };
    expect(redactSensitive(record, c).record).toBe(record);
  });

  it('applies environment-limited rules to their environments only', () => {
    const c = compileSensitiveRules([{ sid: 'a', type: 'email', level: 'full', environments: ['prod01'] }]);
    const body = 'jane@example.com';
    expect(redactSensitive({ environmentSid: 'prod01', request: { body } }, c).redacted).toBe(true);
    expect(redactSensitive({ environmentSid: 'stag01', request: { body } }, c).redacted).toBe(false);
  });
});

describe('the catalogue', () => {
  it('lists every predefined type, and each example behaves as documented', () => {
    const types = predefinedTypes();
    expect(types.map((t) => t.name)).toEqual([...PREDEFINED_TYPES]);
    for (const t of types) {
      expect(t.description).not.toBe('');
      if (t.name === 'password') {
        for (const k of t.examples.matches) expect(isSecretKey(k), k).toBe(true);
        for (const k of t.examples.nonMatches) expect(isSecretKey(k), k).toBe(false);
        continue;
      }
      for (const ex of t.examples.matches)
        expect(one(t.name, 'full', ex), `${t.name} ${ex}`).toBe(`before [REDACTED:${t.name}] after`);
      for (const ex of t.examples.nonMatches) {
        const sample = ex.replace(/ \(.*\)$/, '');
        expect(one(t.name, 'full', sample), `${t.name} ${sample}`).toBe(`before ${sample} after`);
      }
    }
  });
});

describe('robustness', () => {
  it('any body, header or URL text is redacted without throwing, in every declared type', async () => {
    const fc = (await import('fast-check')).default;
    const c = compileSensitiveRules([
      ...PREDEFINED_TYPES.map((type, i) => ({ sid: `r${i}`, type, level: 'partial' as const })),
      { sid: 'k', type: 'kk', pattern: '(?i)ref', applyTo: 'key' as const, level: 'mask' as const },
      { sid: 'v', type: 'vv', pattern: '[0-9]{3}x', applyTo: 'value' as const, level: 'full' as const },
    ]);
    const types = [
      'application/json',
      'application/xml',
      'application/x-www-form-urlencoded',
      'text/plain',
      '',
    ];
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.json({ maxDepth: 4 }),
      fc.constantFrom('<a b="1">x@y.co<c/></a>', '<a><![CDATA[', 'a=%zz&b=1', '{"password":', '&#x110000;'),
    );
    fc.assert(
      fc.property(text, fc.constantFrom(...types), fc.string({ maxLength: 60 }), (body, ct, url) => {
        const res = redactSensitive(
          { request: { body, contentType: ct, url, path: url, headers: { h: body } }, response: { body } },
          c,
        );
        expect(typeof res.record.request.body).toBe('string');
        expect(res.redacted).toBe(res.changes.length > 0);
      }),
      { numRuns: 1500 },
    );
  });
});
