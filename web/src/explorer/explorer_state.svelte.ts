// explorer_state.svelte.ts — the model explorer's state and its calls to the server. The
// text's patterns arrive in batches of heads sized to stay under a budget of values per
// answer, so long texts on big models still load; only the pattern view is asked for.
import { api, ApiError } from '../lib/api';
import { token_label } from '../lib/heads';
import type { HeadRef, ModelInfo, ModelRunResponse, RaggedRows, ScanReport } from '../lib/types';

const message = (e: unknown) => (e instanceof ApiError ? e.message : 'Something went wrong: ' + String(e));
const CELL_BUDGET = 400_000; // pattern values per request
export const WINDOW = 48; // tokens drawn at once

export const DEFAULT_TEXT = 'The committee met on Monday. The committee met again on Friday, and the report was sent to the house.';

export class ExplorerState {
  status = $state<'loading' | 'ready' | 'no-model' | 'failed'>('loading');
  load_error = $state<string | null>(null);
  model = $state<ModelInfo | null>(null);
  scan = $state<ScanReport | null>(null);
  scan_error = $state<string | null>(null);

  text = $state(DEFAULT_TEXT);
  run = $state<ModelRunResponse | null>(null); // tokens, top_next, losses (its heads are not kept here)
  patterns = $state<(RaggedRows | null)[][]>([]); // [layer][head]
  run_error = $state<string | null>(null);
  busy = $state(false);

  selected = $state<HeadRef>({ layer: 0, head: 0 });
  hover = $state<number | null>(null);
  locked = $state<number | null>(null);
  from = $state(0);
  finder_score = $state('induction');

  private seq = 0;

  tokens = $derived(this.run ? this.run.tokens.map((t) => token_label(t, this.model?.bos_token.id ?? null)) : []);
  T = $derived(this.tokens.length);
  to = $derived(Math.min(this.T, this.from + WINDOW));
  /** The row every view highlights: the locked one, else the hovered one, else the last. */
  active = $derived(this.locked ?? this.hover ?? (this.T > 0 ? this.T - 1 : null));
  selected_rows = $derived(this.patterns[this.selected.layer]?.[this.selected.head] ?? null);
  selected_scan = $derived(this.scan?.heads.find((h) => h.layer === this.selected.layer && h.head === this.selected.head) ?? null);

  async start(): Promise<void> {
    try {
      this.model = await api.model();
    } catch (e) {
      this.status = e instanceof ApiError && e.status === 503 ? 'no-model' : 'failed';
      this.load_error = message(e);
      return;
    }
    this.status = 'ready';
    void api
      .scan()
      .then((s) => (this.scan = s))
      .catch((e) => (this.scan_error = message(e)));
    await this.set_text(this.text);
  }

  async set_text(text: string): Promise<void> {
    const model = this.model;
    if (!model) return;
    const my = ++this.seq;
    this.busy = true;
    try {
      const L = model.config.n_layer;
      const H = model.config.n_head;
      // The first answer brings the tokens, predictions and losses with the first batch.
      const first = await api.runModel({ text, bos: true, heads: [[0, 0]], views: ['pattern'], top_k: 5 });
      if (my !== this.seq) return;
      const T = first.tokens.length;
      const per_head = (T * (T + 1)) / 2;
      const batch = Math.max(1, Math.floor(CELL_BUDGET / per_head));
      const all: [number, number][] = [];
      for (let l = 0; l < L; ++l) for (let h = 0; h < H; ++h) all.push([l, h]);
      const patterns: (RaggedRows | null)[][] = Array.from({ length: L }, () => Array(H).fill(null));
      for (let i = 0; i < all.length; i += batch) {
        const r = await api.runModel({ text, bos: true, heads: all.slice(i, i + batch), views: ['pattern'], top_k: 0 });
        if (my !== this.seq) return;
        for (const h of r.heads) patterns[h.layer][h.head] = h.pattern ?? null;
      }
      this.run = first;
      this.patterns = patterns;
      this.text = text;
      this.run_error = null;
      this.hover = null;
      this.locked = null;
      this.from = Math.max(0, T - WINDOW);
    } catch (e) {
      if (my === this.seq) this.run_error = message(e);
    } finally {
      if (my === this.seq) this.busy = false;
    }
  }

  toggle_lock(position: number): void {
    this.locked = this.locked === position ? null : position;
  }

  move_window(by: number): void {
    this.from = Math.max(0, Math.min(Math.max(0, this.T - WINDOW), this.from + by));
  }
}
