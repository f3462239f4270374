// narrow.ts — when the server refuses a sweep over its work limit (413 too_long; docs/api.md,
// POST /api/model/patch and /api/model/path-patch), the narrower sweeps that would fit, as the
// server offers them in the refusal's envelope: it prices each by the cost function its limit
// check uses (research/patch_narrowing.h), so every offer is within the limit and the view only
// shows them. And the ranges fields' text: "0–3, 5" and back.
import { ApiError } from '../../lib/api';

/** One narrower sweep: the fields it changes (the rest as the refused request had them), and what it says. */
export interface Narrowing {
  label: string; // "layers 0–1 only (2 of 12)"
  pairs?: number; // keep the batch's first pairs
  layers?: number[];
  positions?: number[];
  what?: string; // the _all_pos of a _by_pos
  senders?: string[]; // path patching: these senders ("0.1") only
  cost: number; // its multiply-adds, as the server counts them (at most the limit)
}

export interface WorkRefusal {
  cost: number; // the refused sweep's multiply-adds
  limit: number; // the server's limit
  message: string; // the server's own words
  narrowings: Narrowing[]; // what fits, the server's offers in its order; empty when nothing does
}

const numbers = (x: unknown): x is number[] => Array.isArray(x) && x.every((v) => Number.isInteger(v));

/** One of the envelope's offers, or null when it is not one. */
function narrowing_of(x: unknown): Narrowing | null {
  if (!x || typeof x !== 'object') return null;
  const o = x as Record<string, unknown>;
  if (typeof o.label !== 'string' || typeof o.cost !== 'number') return null;
  const n: Narrowing = { label: o.label, cost: o.cost };
  if (Number.isInteger(o.pairs)) n.pairs = o.pairs as number;
  if (numbers(o.layers)) n.layers = o.layers;
  if (numbers(o.positions)) n.positions = o.positions;
  if (typeof o.what === 'string') n.what = o.what;
  if (Array.isArray(o.senders) && o.senders.every((s) => typeof s === 'string')) n.senders = o.senders as string[];
  return n;
}

/** The refusal's cost, limit and offers, or null when the error is not a work-limit refusal. */
export function work_refusal(e: unknown): WorkRefusal | null {
  if (!(e instanceof ApiError) || e.status !== 413 || e.code !== 'too_long') return null;
  const { cost, limit, narrowings } = e.details;
  if (typeof cost !== 'number' || typeof limit !== 'number' || !Array.isArray(narrowings)) return null;
  const offers = narrowings.map(narrowing_of).filter((n): n is Narrowing => n !== null);
  return { cost, limit, message: e.message, narrowings: offers };
}

/** "0–3, 5, 7–9" for a sorted list of whole numbers. */
export function ranges_text(xs: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) ++j;
    parts.push(j === i ? String(xs[i]) : `${xs[i]}–${xs[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}

/** "0-3, 5" (or "0–3") as [0, 1, 2, 3, 5]; blank is null (all); anything else says what is wrong. */
export function parse_ranges(text: string, name: string, below: number): number[] | null | string {
  if (text.trim() === '') return null;
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)\s*(?:[-–]\s*(\d+)\s*)?$/.exec(part);
    if (!m) return `${name}: “${part.trim()}” is not a number or a range such as 2–5.`;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) return `${name}: the range ${a}–${b} runs backwards.`;
    if (b >= below) return `${name}: ${b} is past the last one (${below - 1}).`;
    for (let x = a; x <= b; ++x) out.add(x);
  }
  return [...out].sort((x, y) => x - y);
}
