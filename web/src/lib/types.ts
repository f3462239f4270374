// types.ts — the shapes of the JSON API (docs/api.md), as the web app reads them.
// Field names are the API's, so a reader can hold this file next to the contract.

/** A head's name on the wire: previous, first, same-word, induction, punctuation. */
export type HeadName = string;

export interface Citation {
  authors_year: string; // "Elhage et al. 2021"
  title: string;
  url: string;
}

export interface HeadInfo {
  name: HeadName;
  title: string; // "Same word"
  rule: string; // the scoring rule in words
  description: string; // one sentence: what the head does
  citations: Citation[];
}

/** GET /api/heads */
export interface HeadsResponse {
  default_sentence: string;
  max_tokens: number;
  heads: HeadInfo[];
}

/** Where one query looks most; `keys` has several entries on a tie. */
export interface LooksMostAt {
  query: number;
  keys: number[];
  weight: number;
  text: string; // "chased (2), 92%" or "splits between cat (1) and dog (4), 48% each"
}

/** One row of weights: a number per key, null where the causal mask hides the key. */
export type WeightRow = (number | null)[]; // (T,)

/** POST /api/weights */
export interface WeightsResponse {
  tokens: string[]; // (T,)
  head: HeadName;
  mask: boolean;
  weights: WeightRow[]; // (T, T): [query][key]
  summaries: LooksMostAt[]; // (T,): [query]
}

export interface WeightsRequest {
  sentence: string;
  head: HeadName;
  mask: boolean;
}

export interface HeadSplitPreset {
  name: string;
  d_model: number;
  h: number;
}

/** GET /api/head-split */
export interface HeadSplitResponse {
  d_model: number;
  h: number;
  d_k: number;
  projection_weights: number;
  projection_weights_text: string; // "2,359,296"
  w_q_shape: [number, number];
  w_k_shape: [number, number];
  w_v_shape: [number, number];
  w_o_shape: [number, number];
  presets: HeadSplitPreset[];
}

export interface ChallengeStatus {
  id: string; // "induction-next-word"
  text: string;
  done: boolean;
}

/** GET /api/progress, POST /api/progress/reset */
export interface ProgressResponse {
  lesson: string;
  learner: string;
  total: number;
  completed_count: number;
  challenges: ChallengeStatus[];
  newly_completed?: string[]; // only from POST /api/progress/check
}

/** POST /api/progress/check: what the learner has on screen. */
export interface ProgressCheckRequest {
  learner: string;
  lesson: string;
  sentence: string;
  head: HeadName;
  mask: boolean;
  query: number;
}

export interface Program {
  id: string; // "numpy", "cpp"
  language: string; // "Python with NumPy"
  source: string;
  output: string; // what the program printed when headlab ran it
}

/** GET /api/lessons/:lesson/programs */
export interface ProgramsResponse {
  programs: Program[];
}
