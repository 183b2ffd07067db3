/**
 * A row's requests per interval as a small line (the endpoints table). The numbers stay readable
 * to a screen reader through the label: the total, the busiest interval and the interval length.
 */
export function Sparkline({
  values,
  interval,
  label,
}: {
  values: number[];
  interval: string;
  label: string;
}) {
  const w = 96;
  const h = 24;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : 0;
  const y = (v: number) => (h - 2 - (v / max) * (h - 4)).toFixed(1);
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${y(v)}`).join(' ');
  const total = values.reduce((s, v) => s + v, 0);
  return (
    <svg
      className="sparkline"
      width={w}
      height={h}
      viewBox={`0 0 ${w} ${h}`}
      role="img"
      aria-label={`${label}: ${total} requests, at most ${Math.max(0, ...values)} per ${interval}`}
    >
      {values.length > 1 ? (
        <polyline points={points} fill="none" stroke="currentColor" strokeWidth={1.5} />
      ) : null}
    </svg>
  );
}
