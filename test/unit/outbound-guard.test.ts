import { describe, expect, it } from 'vitest';
import { blockedRange, OutboundGuard, OutboundRefusedError } from '../../services/actions/outbound-guard.js';

/** A resolver from a fixed table: no DNS traffic in unit tests. */
const table =
  (answers: Record<string, string[]>) =>
  async (host: string): Promise<{ address: string; family: number }[]> => {
    const list = answers[host];
    if (!list) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

const resolver = table({
  'public.example': ['93.184.215.14'],
  'internal.example': ['10.1.2.3'],
  'mixed.example': ['93.184.215.14', '192.168.1.10'],
  'v6.example': ['2606:4700::6810:84e5'],
  'meta.example': ['169.254.169.254'],
  localhost: ['127.0.0.1', '::1'],
});

describe('outbound guard', () => {
  it('classifies every private and special range as blocked', () => {
    const blocked = [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
    ];
    for (const ip of blocked) expect(blockedRange(ip), ip).toBeDefined();
    for (const ip of ['93.184.215.14', '8.8.8.8', '2606:4700::6810:84e5', '::ffff:8.8.8.8']) {
      expect(blockedRange(ip), ip).toBeUndefined();
    }
  });

  it('blocks the IPv4-compatible IPv6 range ::/96 (deprecated; a host may route it to the IPv4 address)', async () => {
    for (const ip of ['::7f00:1', '::127.0.0.1', '::a00:1', '::a9fe:a9fe', '::808:808', '::0.0.0.2'])
      expect(blockedRange(ip), ip).toBeDefined();
    const guard = new OutboundGuard([], resolver);
    // The URL parser writes the dotted form as hex: [::127.0.0.1] arrives as [::7f00:1].
    for (const url of ['http://[::127.0.0.1]:8080/', 'http://[::7f00:1]/', 'http://[::169.254.169.254]/']) {
      await expect(guard.check(url), url).rejects.toBeInstanceOf(OutboundRefusedError);
    }
    // A resolver answering with one is refused too.
    const v6 = new OutboundGuard([], table({ 'compat.example': ['::a00:5'] }));
    await expect(v6.check('http://compat.example/')).rejects.toBeInstanceOf(OutboundRefusedError);
  });

  it('refuses private, loopback and link-local targets that are not allow-listed', async () => {
    const guard = new OutboundGuard([], resolver);
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://[::1]/x',
      'http://localhost/x',
      'http://internal.example/x',
      'http://meta.example/latest/meta-data',
      'http://mixed.example/',
      'http://[::ffff:10.0.0.1]/',
      'http://0.0.0.0/',
    ]) {
      await expect(guard.check(url), url).rejects.toBeInstanceOf(OutboundRefusedError);
    }
  });

  it('accepts public hosts and returns the checked address to connect to', async () => {
    const guard = new OutboundGuard([], resolver);
    await expect(guard.check('https://public.example/hook')).resolves.toMatchObject({
      target: { address: '93.184.215.14', family: 4 },
    });
    await expect(guard.check('https://v6.example/')).resolves.toMatchObject({
      target: { address: '2606:4700::6810:84e5', family: 6 },
    });
  });

  it('refuses other schemes, credentials in the URL and malformed URLs', async () => {
    const guard = new OutboundGuard(['127.0.0.1'], resolver);
    for (const url of [
      'ftp://public.example/',
      'file:///etc/passwd',
      'gopher://127.0.0.1/',
      'http://u:p@public.example/',
      'not a url',
    ]) {
      await expect(guard.check(url), url).rejects.toBeInstanceOf(OutboundRefusedError);
    }
  });

  it('lets OUTBOUND_ALLOW name hostnames, addresses and CIDR ranges', async () => {
    const guard = new OutboundGuard(['localhost', '10.0.0.0/8', '::1', '169.254.169.254'], resolver);
    await expect(guard.check('http://localhost:3000/')).resolves.toMatchObject({
      target: { address: '127.0.0.1' },
    });
    await expect(guard.check('http://internal.example/')).resolves.toMatchObject({
      target: { address: '10.1.2.3' },
    });
    await expect(guard.check('http://[::1]:9/')).resolves.toMatchObject({
      target: { address: '::1', family: 6 },
    });
    await expect(guard.check('http://meta.example/')).resolves.toBeDefined();
    // 127.0.0.1 itself is not named: only the hostname localhost is
    await expect(guard.check('http://127.0.0.1/')).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(guard.check('http://192.168.1.1/')).rejects.toBeInstanceOf(OutboundRefusedError);
  });

  it('the test setting (127.0.0.1, localhost, ::1) allows loopback and nothing else private', async () => {
    const guard = new OutboundGuard(['127.0.0.1', 'localhost', '::1'], resolver);
    await expect(guard.check('http://127.0.0.1:1234/')).resolves.toBeDefined();
    await expect(guard.check('http://[::1]:1234/')).resolves.toBeDefined();
    await expect(guard.check('http://127.0.0.2/')).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(guard.check('http://internal.example/')).rejects.toBeInstanceOf(OutboundRefusedError);
  });
});
