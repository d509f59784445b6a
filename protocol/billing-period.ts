/**
 * Billing periods are calendar months in UTC: [first day 00:00, first day of next month 00:00).
 * Every account shares the same boundaries, so a period is named by its start alone.
 */
export interface BillingPeriod {
  /** Inclusive start, ms since epoch. */
  start: number;
  /** Exclusive end (the next period's start), ms since epoch. */
  end: number;
}

export function billingPeriodAt(ms: number): BillingPeriod {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
}
