import { Fragment } from 'react';
import { Link } from 'wouter';
import type { RequestRecord } from '../../api/types';
import { ConsumerLink } from '../../components/consumer-link';
import { ms } from '../../lib/format';
import { formatDateTime, formatDay, formatTime } from '../../lib/time';

/** One request in the stream, linking to its page. */
export function StreamRow({
  r,
  bucket,
  to,
  withDate,
}: {
  r: RequestRecord;
  bucket: string;
  to: string;
  withDate: boolean;
}) {
  const status = r.response?.statusCode ?? null;
  const target = r.request.path ?? r.request.url ?? '–';
  return (
    <tr>
      <td className="nowrap mono small stream-time" title={formatDateTime(r.createdAt)}>
        {withDate ? <span className="stream-date">{formatDay(r.createdAt)} </span> : null}
        {formatTime(r.createdAt)}
      </td>
      <td className="mono">{r.request.method ?? '–'}</td>
      <td className="mono stream-path">
        <Link href={to} title={r.request.url ?? target}>
          <BreakAfterSlashes text={target} />
        </Link>
      </td>
      <td>
        {status ? (
          <span className={`status status-${String(status)[0]}xx`}>{status}</span>
        ) : (
          <span className="muted">none</span>
        )}
      </td>
      <td className="num nowrap">
        {ms(typeof r.timings?.duration === 'number' ? r.timings.duration : null)}
      </td>
      <td className="small hide-narrow stream-consumer">
        <ConsumerLink consumer={r.consumer} bucketSid={bucket} />
      </td>
      <td className="mono small hide-narrow">{r.environmentSid ?? '–'}</td>
    </tr>
  );
}

/** Text with a line-break opportunity after each `/`: paths and zone names where the stream wraps. */
export function BreakAfterSlashes({ text }: { text: string }) {
  const parts = text.split('/');
  return (
    <>
      {parts.map((p, i) => (
        <Fragment key={i}>
          {p}
          {i < parts.length - 1 ? (
            <>
              /<wbr />
            </>
          ) : null}
        </Fragment>
      ))}
    </>
  );
}
