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
  scores: number[][]; // (T, T): the rule's score before the mask
  clauses: string[][]; // (T, T): the clause of the rule that gave each score
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

// ---- the model API (a trained transformer) ----

export interface ModelConfig {
  n_layer: number;
  n_head: number;
  n_embd: number;
  n_ctx: number;
  vocab_size: number;
  mlp: boolean;
  tied: boolean;
  family?: string; // config.json's model_type: "gpt2", "llama", "qwen3", "gemma2", ...
  block?: ModelBlock;
}

/** The configured block of GET /api/model's config (src/model/config.h). */
export interface ModelBlock {
  positions: "learned" | "rotary" | "none";
  rotary_dim: number; // rotated channels of each head (0 without rotary)
  rotary_pairing: "halves" | "interleaved";
  rope_theta: number;
  rope_scaling?: string; // the global layers': "none", "linear", "llama3", "per-frequency" (GGUF's rope_freqs)
  rope_scaling_factor?: number; // linear's or llama3's factor (1 = none)
  rope_local_theta?: number; // Gemma 3's sliding layers' base, unscaled (0 = no such layer)
  norm: "layernorm" | "rmsnorm" | "rmsnorm_plus_one";
  mlp_kind: "gelu_tanh" | "gelu_erf" | "swiglu" | "geglu";
  n_kv_head: number; // query head h reads KV head h / (n_head / n_kv_head)
  head_size: number;
  d_mlp: number;
  qkv_bias: boolean;
  qk_norm: boolean;
  parallel_residual: boolean;
  sandwich_norm: boolean;
  attention_scale: number;
  attn_softcap: number; // 0 = off
  final_softcap: number; // 0 = off
  window: number[]; // [layer] sliding window in keys, 0 = every key
}

/** GET /api/model */
export interface ModelInfo {
  name: string; // "headlab-tiny"
  config: ModelConfig;
  bos_token: { id: number; text: string };
  max_tokens: number;
  has_training_log: boolean;
}

/** One token of a model run; begin/end are byte offsets into the text (both 0 for BOS). */
export interface ModelToken {
  id: number;
  text: string;
  begin: number;
  end: number;
}

/** A head of the model: layer and head index, both 0-based. Named "layer.head" on screen. */
export interface HeadRef {
  layer: number;
  head: number;
}

/** Ragged causal rows: row q holds keys 0..q. (T, q+1) */
export type RaggedRows = number[][];

export type PatternView = 'pattern' | 'value_weighted' | 'scores';

/** Half-open ranges of token positions [begin, end), the start token being 0. With a window,
 *  row q - queries[0] of a view holds keys keys[0]..min(keys[1] - 1, q), so its cell for key k
 *  is at [q - queries[0]][k - keys[0]]. A square window (queries = keys = [from, to)) sends
 *  ragged rows again, counted from `from`: row i holds keys from..from+i. */
export interface TokenWindow {
  queries: [number, number];
  keys: [number, number];
}

export interface ModelRunRequest {
  text: string;
  bos?: boolean;
  heads?: [number, number][]; // [layer, head]; omitted: every head
  views?: PatternView[];
  rollout?: boolean;
  window?: TokenWindow; // omitted: every row and key
  top_k?: number;
  truncate?: boolean;
  /** false: no top_next, token_loss nor loss in the answer, and the forward stops after the
   *  last layer of the heads asked for (docs/api.md); for pages that draw only heads */
  predictions?: boolean;
  /** 'base64': each view one compact string (uint16 probabilities, float32 scores; docs/api.md),
   *  decoded back into rows by api.runModel, so a page sees the same shape either way */
  encoding?: 'json' | 'base64';
}

/** Each view is RaggedRows of the whole text, or, when the answer has a window, its rows. */
export interface HeadPatterns extends HeadRef {
  pattern?: RaggedRows;
  value_weighted?: RaggedRows;
  scores?: RaggedRows;
}

export interface Prediction {
  id: number;
  text: string;
  prob: number; // softmax over the vocabulary
  logit: number; // the raw score
}

/** GET /api/model/queue?request_id=ID: where a run posted with that id is. */
export interface QueuePlace {
  state: 'waiting' | 'running' | 'unknown';
  ahead: number; // runs to be taken before it (some may run in its batch)
  waiting: number; // runs waiting in all
}

/** POST /api/model/run asked with predictions: false: the heads alone (the forward stopped
 *  after the last layer asked for, docs/api.md). */
export interface ModelRunHeads {
  tokens: ModelToken[]; // (T,)
  n_layer: number;
  n_head: number;
  heads: HeadPatterns[];
  rollout?: RaggedRows;
  window?: TokenWindow; // the window asked for: the views hold only its rows and keys
  truncated?: boolean;
}

/** POST /api/model/run: the heads and the model's predictions. */
export interface ModelRunResponse extends ModelRunHeads {
  top_next: Prediction[][]; // (T, top_k): top_next[t] predicts the token after t
  token_loss: (number | null)[]; // (T,): loss of the actual next token; null at the end
  loss: number;
}

export interface Ablation extends HeadRef {
  kind: 'zero' | 'mean';
}
export interface Block {
  layer: number;
  head: number; // -1: every head of the layer
  key: number;
}
export interface Replacement extends HeadRef {
  kind: 'uniform';
}

export interface ModelInterveneRequest {
  text: string;
  bos?: boolean;
  ablate?: Ablation[];
  block?: Block[];
  replace?: Replacement[];
  steer?: Steering[];
  top_k?: number;
}

/** Steering at blocks.{layer}.hook_resid_pre: coef * vector (n_embd numbers) from position
 * `from` on, or ActAdd: the difference of plus's and minus's resid_pre, row by row. */
export type Steering =
  | { layer: number; coef: number; vector: number[]; from?: number }
  | { layer: number; coef: number; plus: string; minus: string; from?: number };

export interface RunOutcome {
  loss: number;
  token_loss: (number | null)[]; // (T,)
  top_next: Prediction[][]; // (T, top_k)
}

/** POST /api/model/intervene */
export interface ModelInterveneResponse {
  tokens: ModelToken[];
  baseline: RunOutcome;
  intervened: RunOutcome;
  loss_change: number; // intervened.loss - baseline.loss
}

/** POST /api/model/query-scores: one query's q·k/√HS against every key, the later ones too. */
export interface QueryScoresRequest {
  text: string;
  bos?: boolean;
  layer: number;
  head: number;
  query: number;
}
export interface QueryScoresResponse {
  tokens: ModelToken[];
  layer: number;
  head: number;
  query: number;
  scores: number[]; // (T,)
}

/** POST /api/lessons/causal-mask/induction: one head on the repeated sentence. */
export interface InductionHeadOnText {
  name: string; // "induction" (rule-built) or "1.2" (the model's)
  layer?: number;
  head?: number;
  pattern: RaggedRows; // (T, q+1)
  score: number; // the scanner's prefix-matching score
  chance: number; // what a head attending evenly to keys 0..q scores
}

export interface InductionComparisonResponse {
  tokens: ModelToken[]; // (T,) BOS first
  measure: 'prefix_matching';
  queries_scored: number;
  model_head_labelled: boolean;
  rule_built: InductionHeadOnText;
  model_head: InductionHeadOnText;
}

/** One measured score of a head next to its chance level; score is null when not measured. */
export interface HeadScore {
  score: number | null;
  chance: number | null;
}

export interface HeadLabel {
  name: string; // "induction", "previous_token", "sink", ...
  score: number;
  threshold: number;
  margin: number;
}

export interface ScannedHead extends HeadRef {
  name: string; // "1.5"
  scores: Record<string, HeadScore>; // "induction" → { score, chance }
  labels: HeadLabel[]; // largest margin first
}

/** GET /api/model/scan, each score paired with its chance by api.ts */
export interface ScanReport {
  model: string;
  heads: ScannedHead[];
  icl: { loss_first_copy: number; loss_second_copy: number; ratio: number } | null;
  probes?: { natural_tokens: number; repeat_length: number }; // what the scanner ran on
}

/** GET /api/model/training-log: the CSV as columns and rows; empty cells are null. */
export interface TrainingLog {
  columns: string[]; // "step", "loss", ..., "induction", ...
  rows: (number | null)[][];
}

// ---- the course ----

export interface CourseLesson {
  id: string; // "causal-mask"
  number: number;
  title: string;
  total: number;
  completed_count: number;
  coming: boolean; // announced, not built yet
}

/** GET /api/lessons */
export interface CourseResponse {
  lessons: CourseLesson[];
}

export type TrainedHeadsChallenge = 'pattern-quiz' | 'find-induction' | 'find-sink' | 'ablation-matters';

export interface TrainedHeadsCheckRequest {
  learner: string;
  challenge: TrainedHeadsChallenge;
  // the quiz: a choice; find-induction and ablation-matters: a head and the learner's text;
  // find-sink: a head, the text and "sink" or "reads-first". revealed: the answer was shown
  // first, so a right answer is explained but earns no credit.
  answer: ({ choice: string } | (HeadRef & { text: string }) | (HeadRef & { text: string; choice: string })) & { revealed?: boolean };
}

/** POST /api/lessons/trained-heads/check */
export interface TrainedHeadsCheckResponse {
  correct: boolean;
  explanation: string;
  progress: ProgressResponse;
}

export interface FeedbackRequest {
  lesson: string; // a lesson id or "explorer"
  message: string; // 1-2000 characters
  contact?: string; // at most 200
}

/** POST /api/feedback → 201 */
export interface FeedbackResponse {
  id: number;
}
