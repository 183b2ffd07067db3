import type { TaplineStats } from './types.js';

/** The event counters of `stats()`, counted where each event happens. */
export type Counters = Pick<
  TaplineStats,
  | 'captured'
  | 'skipped'
  | 'excluded'
  | 'sent'
  | 'rejected'
  | 'batches'
  | 'failures'
  | 'retries'
  | 'internalErrors'
>;

export function newCounters(): Counters {
  return {
    captured: 0,
    skipped: 0,
    excluded: 0,
    sent: 0,
    rejected: 0,
    batches: 0,
    failures: 0,
    retries: 0,
    internalErrors: 0,
  };
}
