/** Number formatting shared by tiles, tables and chart axes. */
const int = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const one = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

export function count(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (Math.abs(n) >= 1e6) return `${one.format(n / 1e6)}M`;
  if (Math.abs(n) >= 1e4) return `${one.format(n / 1e3)}k`;
  return int.format(n);
}

export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  if (n >= 10_000) return `${one.format(n / 1000)} s`;
  if (n >= 100) return `${int.format(n)} ms`;
  return `${one.format(n)} ms`;
}

export function percent(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return `${n >= 10 ? int.format(n) : one.format(n)}%`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n >= 1 << 20) return `${one.format(n / (1 << 20))} MB`;
  if (n >= 1024) return `${one.format(n / 1024)} KB`;
  return `${int.format(n)} B`;
}

export function statusClass(
  code: number | null | undefined,
): 'ok' | 'redirect' | 'client' | 'server' | 'none' {
  if (!code) return 'none';
  if (code >= 500) return 'server';
  if (code >= 400) return 'client';
  if (code >= 300) return 'redirect';
  return 'ok';
}
