// research_types.ts — the research toolbox's requests and answers (docs/api.md, "POST
// /api/model/patch", "POST /api/model/lens", "GET/POST /api/model/compose"; the measures:
// docs/research.md). `values` nest the `axes` in TransformerLens's order.

/** A token as the research routes name it. */
export interface ResearchToken {
  id: number;
  text: string;
}

export const PATCH_WHATS = [
  'resid_pre',
  'resid_mid',
  'attn_out',
  'mlp_out',
  'z_all_pos',
  'q_all_pos',
  'k_all_pos',
  'v_all_pos',
  'pattern_all_pos',
  'z_by_pos',
  'q_by_pos',
  'k_by_pos',
  'v_by_pos',
  'pattern_by_pos',
  'block_every',
  'attn_head_all_pos_every',
  'attn_head_by_pos_every',
] as const;
export type PatchWhat = (typeof PATCH_WHATS)[number];

export const PATCH_METRICS = ['normalized', 'logit_diff', 'logprob', 'loss'] as const;
export type PatchMetric = (typeof PATCH_METRICS)[number];

/** activation: one patched run per cell, measured; attribution: one backward per pair, each cell a first-order estimate. */
export type PatchMethod = 'activation' | 'attribution';

export interface PatchRequest {
  clean: string;
  corrupted: string;
  answer: string;
  wrong?: string;
  what: PatchWhat;
  metric: PatchMetric;
  noising?: boolean;
  layers?: number[];
  positions?: number[];
  loss_positions?: { from: number; to?: number }; // metric loss only: the mean over positions [from, to) (to absent: to the end)
  method?: PatchMethod; // absent: activation
}

/** Nested numbers: (layer, pos) is number[][], (layer, pos, head) number[][][], ... */
export type Nested = number | Nested[];

export interface PatchResponse {
  what: PatchWhat;
  metric: PatchMetric;
  direction: 'denoising' | 'noising';
  axes: string[]; // e.g. ["layer", "pos"], ["layer", "head"], ["patch_type", "layer", "pos"]
  values: Nested[];
  layers: number[]; // the layer of each index on the layer axis
  positions: number[]; // the position of each index on a pos / dest_pos axis
  heads: number;
  clean: number; // the metric of the unpatched clean run
  corrupted: number; // ... and of the corrupted run
  tokens?: ResearchToken[]; // the clean prompt's (absent for sweeps without a pos axis)
  corrupted_tokens?: ResearchToken[];
  patch_types?: string[]; // the *_every sweeps' first axis
  pairs: number;
  cost: { forwards: number; block_tokens: number; multiply_adds: number };
  skipped: number;
  method?: 'attribution'; // present only for attribution patching's estimates
  loss_positions?: { from: number; to: number | null }; // the loss metric's positions [from, to), when asked (to null: to the end)
}

export interface LensRequest {
  text: string;
  answers?: string[];
  top_k?: number;
}

export interface LensTop extends ResearchToken {
  logit: number;
  prob: number;
}
export interface LensAnswer {
  id: number;
  rank: number; // 0 = the most likely token
  logit: number;
  prob: number;
  logprob: number;
}
/** One (layer, pos) cell of the lens. */
export interface LensCell {
  top: LensTop[];
  entropy: number; // nats
  kl_final: number; // KL(final || this layer), nats
  answers: LensAnswer[];
}
export interface LensResponse {
  what: 'logit_lens';
  axes: ['layer', 'pos'];
  layers: string[]; // "0_pre", "1_pre", ..., "final_post"
  tokens: ResearchToken[];
  answers: ResearchToken[];
  truncated: boolean;
  values: LensCell[][]; // [layer][pos]
}

export type ComposeKind = 'q' | 'k' | 'v';
export interface ComposeRequest {
  kind: ComposeKind;
  threshold?: number;
  fold_ln?: boolean;
}
export interface ComposeEdge {
  kind: ComposeKind;
  sender: [number, number]; // [layer, head]
  receiver: [number, number];
  score: number;
}
export interface ComposeResponse {
  what: string; // "k_composition"
  axes: string[]; // sender_layer, sender_head, receiver_layer, receiver_head
  values: number[][][][]; // [sender layer][sender head][receiver layer][receiver head]
  weights: 'raw' | 'fold_ln';
  baseline: { mean: number; std: number; samples: number; how: string };
  threshold?: number;
  edges?: ComposeEdge[];
}
