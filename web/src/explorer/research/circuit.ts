// circuit.ts — one head's OV and QK circuits as GET/POST /api/model/compose answers them with
// `circuit` (docs/api.md; docs/research.md, "Composition and circuits"): the top token pairs of
// W_E W_V W_O W_U and W_E W_Q W_Kᵀ W_Eᵀ, the share of tokens whose largest OV output is
// themselves, and Elhage et al.'s copying score Σλ / Σ|λ| of the OV circuit's eigenvalues.
import { request } from '../../lib/api';
import type { ComposeRequest, ComposeResponse, ResearchToken } from '../../lib/research_types';

export interface HeadCircuits {
  head: [number, number];
  copying_score: number; // Σλ / Σ|λ|: 1 copies every direction it reads, −1 suppresses
  ov_self_top1: number; // share of source tokens whose largest OV output is themselves
  ov_top: { source: ResearchToken; output: ResearchToken; value: number }[];
  qk_top: { query: ResearchToken; key: ResearchToken; value: number }[];
  ov_eigenvalues: [number, number][]; // (re, im), largest |λ| first
}

export interface CircuitRequest extends ComposeRequest {
  circuit: string; // "L.H"
  top: number;
}

export const compose_with_circuit = (req: CircuitRequest) =>
  request<ComposeResponse & { circuit: HeadCircuits }>('POST', '/api/model/compose', req);

/** What the copying score and the top-1 share say, in words chosen by their values: a copying
 *  head (Elhage et al.) has mostly positive OV eigenvalues; ARENA's check asks further that
 *  most tokens have themselves as their largest output. */
export function copying_words(c: HeadCircuits): string {
  const name = `${c.head[0]}.${c.head[1]}`;
  const s = c.copying_score.toFixed(4);
  const self = `${Math.round(100 * c.ov_self_top1)}% of tokens have themselves as their largest OV output`;
  if (c.copying_score >= 0.7 && c.ov_self_top1 >= 0.5) return `Head ${name}’s OV circuit copies: copying score ${s} (its eigenvalues mostly positive), and ${self}.`;
  if (c.copying_score >= 0.7) return `Head ${name}’s OV circuit has mostly positive eigenvalues: copying score ${s}, as a copying head’s; but only ${self}.`;
  if (c.copying_score <= -0.7) return `Head ${name}’s OV circuit suppresses what it reads: copying score ${s} (its eigenvalues mostly negative); ${self}.`;
  return `Head ${name}’s OV circuit neither clearly copies nor suppresses: copying score ${s}; ${self}.`;
}
