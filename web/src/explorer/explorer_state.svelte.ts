// explorer_state.svelte.ts — the model explorer's state and its calls to the server. The
// text's patterns arrive in batches of heads sized to stay under a budget of values per
// answer, so long texts on big models still load; only the pattern view is asked for.
import { api, ApiError } from '../lib/api';
import { token_label } from '../lib/heads';
import type { HeadRef, ModelInfo, ModelRunResponse, RaggedRows, ScanReport } from '../lib/types';

const message = (e: unknown) => (e instanceof ApiError ? e.message : 'Something went wrong: ' + String(e));
const CELL_BUDGET = 400_000; // pattern values per request
export const WINDOW = 48; // tokens drawn at once

/** The explorer's part of the address: ?text=…&lh=1.6&row=5 (text, opened head, held row).
 *  Its own keys, so they never collide with the first lesson's sentence/head/query/mask. */
export interface ExplorerLink {
  text?: string;
  layer?: number;
  head?: number;
  row?: number;
}

export function read_link(search: string): ExplorerLink {
  const p = new URLSearchParams(search);
  const link: ExplorerLink = {};
  const text = p.get('text');
  if (text !== null && text.trim() !== '') link.text = text;
  const lh = /^(\d{1,3})\.(\d{1,3})$/.exec(p.get('lh') ?? '');
  if (lh) [link.layer, link.head] = [Number(lh[1]), Number(lh[2])];
  const row = /^\d{1,5}$/.exec(p.get('row') ?? '');
  if (row) link.row = Number(row[0]);
  return link;
}

export function write_link(text: string, layer: number, head: number, row: number | null): string {
  const p = new URLSearchParams();
  if (text !== DEFAULT_TEXT) p.set('text', text);
  if (layer !== 0 || head !== 0) p.set('lh', `${layer}.${head}`);
  if (row !== null) p.set('row', String(row));
  const s = p.toString();
  return s ? '?' + s : '';
}

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
  /** Why a shared link could not be followed (its text refused, its head or row absent). */
  link_notice = $state<string | null>(null);

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
    const link = read_link(location.search);
    const notices: string[] = [];
    if (link.layer !== undefined && link.head !== undefined) {
      const { n_layer, n_head } = this.model.config;
      if (link.layer < n_layer && link.head < n_head) this.selected = { layer: link.layer, head: link.head };
      else notices.push(`This model has no head ${link.layer}.${link.head} (layers 0–${n_layer - 1}, heads 0–${n_head - 1}).`);
    }
    await this.set_text(link.text ?? this.text);
    if (link.text !== undefined && this.run_error) {
      notices.push(`The link’s text could not be shown: ${this.run_error}`);
      await this.set_text(DEFAULT_TEXT);
    }
    if (link.row !== undefined && this.run) {
      if (link.row < this.T) {
        this.locked = link.row;
        this.from = Math.max(0, Math.min(this.from, link.row - Math.floor(WINDOW / 2)));
      } else notices.push(`The text has no token ${link.row} (it has ${this.T}).`);
    }
    this.link_notice = notices.length ? notices.join(' ') : null;
  }

  /** Keeps the address in step with what is shown, so a copied link reopens it. */
  sync_url(): void {
    if (this.status !== 'ready' || !this.run) return;
    const search = write_link(this.text, this.selected.layer, this.selected.head, this.locked);
    if (search !== location.search) history.replaceState(history.state, '', search + location.hash);
  }

  /** Leaving the explorer takes its keys out of the address. */
  clear_url(): void {
    const p = new URLSearchParams(location.search);
    for (const k of ['text', 'lh', 'row']) p.delete(k);
    const s = p.toString();
    history.replaceState(history.state, '', (s ? '?' + s : location.pathname) + location.hash);
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
