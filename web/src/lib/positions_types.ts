// positions_types.ts — the JSON of the word-order routes (docs/api.md, "Word order"): RoPE, position
// vectors, the content-only head, the three lesson models and lesson 3's answer check.
import type { ModelToken, ProgressResponse } from './types';

/** POST /api/rope */
export interface RopeRequest {
  pairs: [number, number][];
  q?: number[];
  k?: number[];
  theta?: number;
}
export interface RopePairResult {
  m: number;
  n: number;
  offset: number;
  q: number[]; // (HS) q rotated to m
  k: number[]; // (HS) k rotated to n
  dot: number;
}
export interface RopeResponse {
  theta: number;
  head_size: number;
  pairs: RopePairResult[];
}

/** GET /api/rope/wavelengths */
export interface RopePreset {
  name: string;
  theta: number;
  head_size: number;
  context: number;
}
export interface WavelengthsResponse {
  theta: number;
  head_size: number;
  pairs: { i: number; frequency: number; wavelength: number }[];
  presets: RopePreset[];
}

/** GET /api/positions */
export interface PositionsResponse {
  model: string | null;
  n_ctx: number;
  n_embd: number;
  positions: number[]; // (N) the positions shown
  learned: number[][] | null; // (N, N) cosine
  learned_note: string;
  sinusoidal: number[][]; // (N, N) cosine
}

/** POST /api/positions/content-only */
export interface ContentOnlyResponse {
  tokens: ModelToken[]; // (T) in the shown order
  order: number[]; // (T)
  head: number;
  n_head: number;
  pattern: number[][]; // (T, T) every key, no mask
}

/** A head's mean weight on the token just before, over queries from <= q < to, beside an even spread's. */
export interface PreviousTokenShare {
  from: number;
  to: number;
  queries: number;
  share: number;
  chance: number;
}

export interface BestHead {
  layer: number;
  head: number;
  score: number;
  chance: number;
}
/** GET /api/positions/models */
export interface LessonModel {
  positions: string; // "none" | "learned" | "rotary"
  name: string;
  title: string;
  available: boolean;
  error?: string;
  config_positions?: string; // what the folder's config says

  n_layer?: number;
  n_head?: number;
  n_ctx?: number;
  trained_context?: number;
  run_limit?: number;
  previous_token?: BestHead;
  induction?: BestHead;
  previous_by_position?: PreviousTokenShare[]; // the previous-token head, by band of query positions
  sinks?: { layer: number; head: number; first_token: number; value_weighted: number }[]; // the scanner's sink heads
}

/** POST /api/positions/length */
export interface LengthResponse {
  model: string;
  positions: string;
  trained_context: number;
  run_limit: number;
  T: number;
  token_loss: number[]; // (T - 1)
  inside: number;
  beyond: number | null;
  beyond_count: number;
}

/** POST /api/positions/run */
export interface LessonRunResponse {
  model: string;
  positions: string;
  tokens: ModelToken[];
  pattern: number[][]; // (T, T) zeros above the diagonal
  previous_token: PreviousTokenShare; // the head on this text, queries 2..T-1
  value_weighted: number[][]; // (T, T) Kobayashi et al.'s value-weighted rows
  first_token: { rows: number; attention: number; value_weighted: number; parks: boolean }; // rows 2..T-1, as the find-sink check
}

export type WordOrderChallenge = 'shuffle-follows' | 'wpe-neighbour' | 'offset-only';
export interface WordOrderAnswer {
  text?: string;
  head?: number;
  order?: number[];
  positions?: number[];
  revealed?: boolean;
}
export interface WordOrderCheckResponse {
  correct: boolean;
  explanation: string;
  progress: ProgressResponse;
}
