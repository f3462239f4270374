// nice_ticks.ts — axis ticks at round numbers: a step of 1, 2 or 5 × 10^k, chosen so that
// about `n` steps span [lo, hi], and labels with just the decimals that step needs.
//   nice_ticks(0, 9.8, 4)  -> { step: 2, ticks: [0, 2, 4, 6, 8], lo: 0, hi: 10 }
// lo/hi: the range widened to whole steps (an axis that starts and ends on a tick).

export interface NiceTicks {
  step: number;
  ticks: number[]; // inside [lo, hi], lo and hi included
  lo: number;
  hi: number;
}

/** The round step (1, 2 or 5 × 10^k) nearest to `raw` from above. */
export function nice_step(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const k = Math.floor(Math.log10(raw));
  const base = 10 ** k;
  for (const m of [1, 2, 5, 10]) if (raw <= m * base * (1 + 1e-9)) return m * base;
  return 10 * base;
}

/** Ticks over [lo, hi] (widened to whole steps when `widen`), about n steps. */
export function nice_ticks(lo: number, hi: number, n = 4, widen = true): NiceTicks {
  if (!(hi > lo)) hi = lo + 1;
  const step = nice_step((hi - lo) / Math.max(1, n));
  const a = widen ? Math.floor(lo / step + 1e-9) * step : lo;
  const b = widen ? Math.ceil(hi / step - 1e-9) * step : hi;
  const ticks: number[] = [];
  for (let i = Math.ceil(a / step - 1e-9); i * step <= b + step * 1e-9; i++) ticks.push(round_to_step(i * step, step));
  return { step, ticks, lo: a, hi: b };
}

/** The digits after the point that a step needs: 0.25 -> 2, 5 -> 0. */
export function step_decimals(step: number): number {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

/** A tick's label: 1000 -> "1,000", 0.5 -> "0.5" at step 0.5. */
export function tick_label(v: number, step: number): string {
  return v.toLocaleString('en', { minimumFractionDigits: step_decimals(step), maximumFractionDigits: step_decimals(step) });
}

// 0.1 * 3 is 0.30000000000000004: round to the step's decimals.
function round_to_step(v: number, step: number): number {
  const d = step_decimals(step);
  return Number(v.toFixed(Math.min(20, d + 1)));
}
