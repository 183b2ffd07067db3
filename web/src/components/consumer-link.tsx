import { Link } from 'wouter';
import type { RequestRecord } from '../api/types';
import { useSharedHref } from '../lib/url-state';

/**
 * A request's consumer (docs/consumers.md) as a link to the consumer's page in the request's
 * bucket: the name the call carried, else the id (a keyed-hash label for a credential); a dash
 * when the call has none.
 */
export function ConsumerLink({
  consumer,
  bucketSid,
}: {
  consumer: RequestRecord['consumer'];
  bucketSid: string;
}) {
  const href = useSharedHref();
  if (!consumer?.id) return <span className="muted">–</span>;
  return (
    <Link
      href={href('/consumers/detail', { id: consumer.id, bucket: bucketSid })}
      className={consumer.name ? undefined : 'mono'}
      title={consumer.group ? `${consumer.id} · group ${consumer.group}` : consumer.id}
    >
      {consumer.name ?? consumer.id}
    </Link>
  );
}
