import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { newAccount, testEnv, waitFor } from '../helpers/client.js';

/**
 * The `tapline_auth` NOTIFY empties every process's credential and bucket caches. A bucket's
 * first record flips `app_is_connected`; that must not empty them, a rename or deletion must.
 * Notifications are told apart by the backend that raised them (this test's own connection), so
 * other tests' changes running at the same time do not count.
 */
describe('bucket cache invalidation', () => {
  const client = new pg.Client({ connectionString: testEnv().databaseUrl });
  afterAll(() => client.end());

  it('notifies on rename and delete, not on the first-record flag', async () => {
    const acct = await newAccount();
    await client.connect();
    const own: string[] = [];
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    client.on('notification', (n) => {
      if (n.processId === pid) own.push(`${n.channel}:${n.payload ?? ''}`);
    });
    await client.query('LISTEN tapline_auth');

    await client.query('UPDATE buckets SET app_is_connected = true WHERE sid = $1 AND NOT app_is_connected', [
      acct.bucketSid,
    ]);
    await client.query('UPDATE buckets SET name = $2 WHERE sid = $1', [acct.bucketSid, 'renamed']);
    // Notifications of one session arrive in commit order: once the rename's is here, one for the
    // flag would have arrived before it.
    await waitFor(() => own.length >= 1, { what: 'the rename notification' });
    // The payload names the bucket, so each process forgets that bucket alone.
    expect(own).toEqual([`tapline_auth:buckets:${acct.bucketSid}`]);

    await client.query('DELETE FROM buckets WHERE sid = $1', [acct.bucketSid]);
    await waitFor(() => own.length >= 2, { what: 'the delete notification' });
    expect(own).toEqual([`tapline_auth:buckets:${acct.bucketSid}`, `tapline_auth:buckets:${acct.bucketSid}`]);
  });
});
