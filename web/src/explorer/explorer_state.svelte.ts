// explorer_state.svelte.ts — the model explorer's state and its calls to the server. Only
// the window of tokens drawn is asked for: every head's pattern rows and keys in [from, to)
// (a `window` of POST /api/model/run), in batches of heads under a budget of values per
// answer, so long texts on big models stay small on the wire. Moving the window asks again.
import { api, ApiError, error_message } from '../lib/api';
import { token_label } from '../lib/heads';
import { tab_of, with_tab } from './research/tabs';
import type { HeadRef, ModelInfo, ModelRunRequest, ModelRunResponse, RaggedRows, ScanReport, TokenWindow } from '../lib/types';

// The server's words in the page's terms (lib/api.ts).
const message = error_message;
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
  /** [layer][head]: the rows of tokens from..to-1, row i holding keys from..from+i (the
   *  server's answer to the square window [from, to)). */
  patterns = $state<(RaggedRows | null)[][]>([]);
  run_error = $state<string | null>(null);
  busy = $state(false); // a text is loading
  loading_window = $state(false); // a moved window is loading
  ahead = $state<number | null>(null); // runs ahead of this page's in the model's queue, while it waits

  selected = $state<HeadRef>({ layer: 0, head: 0 });
  hover = $state<number | null>(null);
  locked = $state<number | null>(null);
  from = $state(0);
  finder_score = $state('induction');
  /** Why a shared link could not be followed (its text refused, its head or row absent). */
  link_notice = $state<string | null>(null);

  private text_seq = 0; // the latest text asked for wins
  private window_seq = 0; // the latest window asked for wins; a new text cancels them all
  // aborted when a newer text or window takes their place: a pending retry (lib/retry.ts) ends
  private text_abort = new AbortController();
  private window_abort = new AbortController();
  private want_from: number | null = null; // where the window is going while it loads

  tokens = $derived(this.run ? this.run.tokens.map((t) => token_label(t, this.model?.bos_token.id ?? null)) : []);
  /** Where the BOS token sits (the server puts it first: "bos": true), or null without one. */
  bos_position = $derived.by(() => {
    const first = this.run?.tokens[0];
    return first && this.model && first.id === this.model.bos_token.id && first.begin === first.end ? 0 : null;
  });
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
        await this.show_from(Math.max(0, Math.min(this.from, link.row - Math.floor(WINDOW / 2))));
      } else notices.push(`The text has no token ${link.row} (it has ${this.T}).`);
    }
    this.link_notice = notices.length ? notices.join(' ') : null;
  }

  /** Keeps the address in step with what is shown, so a copied link reopens it. */
  sync_url(): void {
    if (this.status !== 'ready' || !this.run) return;
    // the open view (`?view=`, research/tabs.ts) is Explorer.svelte's: kept as it is
    const search = with_tab(write_link(this.text, this.selected.layer, this.selected.head, this.locked), tab_of(location.search) ?? 'heads');
    if (search !== location.search) history.replaceState(history.state, '', search + location.hash);
  }

  /** Leaving the explorer ends its runs' pending retries (lib/retry.ts): nobody waits for them. */
  stop(): void {
    this.text_abort.abort();
    this.window_abort.abort();
  }

  /** Leaving the explorer takes its keys out of the address. */
  clear_url(): void {
    const p = new URLSearchParams(location.search);
    for (const k of ['text', 'lh', 'row', 'view']) p.delete(k);
    const s = p.toString();
    history.replaceState(history.state, '', (s ? '?' + s : location.pathname) + location.hash);
  }

  async set_text(text: string): Promise<void> {
    const model = this.model;
    if (!model) return;
    const my = ++this.text_seq;
    ++this.window_seq; // a window of the old text is not wanted any more
    this.text_abort.abort();
    this.window_abort.abort();
    const { signal } = (this.text_abort = new AbortController());
    this.want_from = null;
    this.loading_window = false;
    this.busy = true;
    try {
      // The first answer brings the tokens, predictions and losses; the heads come by window.
      const first = await this.run_waiting({ text, bos: true, heads: [], top_k: 5 }, signal);
      if (my !== this.text_seq) return;
      const T = first.tokens.length;
      const from = Math.max(0, T - WINDOW);
      const patterns = await this.fetch_window(text, from, T, () => my === this.text_seq, signal);
      if (!patterns) return;
      ++this.window_seq; // a window moved on the old text meanwhile is stale now
      this.run = first;
      this.patterns = patterns;
      this.text = text;
      this.run_error = null;
      this.hover = null;
      this.locked = null;
      this.from = from;
    } catch (e) {
      if (my === this.text_seq) this.run_error = message(e);
    } finally {
      if (my === this.text_seq) this.busy = false;
    }
  }

  /** A run that shows its place in the model's queue while it waits (a class clicking at once). */
  private run_waiting(req: ModelRunRequest, signal: AbortSignal): Promise<ModelRunResponse> {
    return api.runModelWaiting(req, (ahead) => (this.ahead = ahead), signal);
  }

  /** Every head's pattern in the square window [from, to), or null once `wanted` says the
   *  answer is no longer wanted. Batches of heads keep each answer under CELL_BUDGET values. */
  private async fetch_window(text: string, from: number, to: number, wanted: () => boolean, signal: AbortSignal): Promise<(RaggedRows | null)[][] | null> {
    const { n_layer: L, n_head: H } = this.model!.config;
    const n = to - from;
    const batch = Math.max(1, Math.floor(CELL_BUDGET / Math.max(1, (n * (n + 1)) / 2)));
    const window: TokenWindow = { queries: [from, to], keys: [from, to] };
    const all: [number, number][] = [];
    for (let l = 0; l < L; ++l) for (let h = 0; h < H; ++h) all.push([l, h]);
    const patterns: (RaggedRows | null)[][] = Array.from({ length: L }, () => Array(H).fill(null));
    for (let i = 0; i < all.length; i += batch) {
      const r = await this.run_waiting({ text, bos: true, heads: all.slice(i, i + batch), views: ['pattern'], window, top_k: 0 }, signal);
      if (!wanted()) return null;
      for (const h of r.heads) patterns[h.layer][h.head] = h.pattern ?? null;
    }
    return patterns;
  }

  /** Shows tokens from..from+WINDOW-1 (clamped to the text). The window moves when its cells
   *  arrive, so the views never draw a window they have not got. */
  async show_from(wanted_from: number): Promise<void> {
    if (!this.run) return;
    const text = this.text;
    const T = this.T;
    const from = Math.max(0, Math.min(Math.max(0, T - WINDOW), wanted_from));
    if (from === (this.want_from ?? this.from)) return;
    const my = ++this.window_seq;
    this.window_abort.abort();
    const { signal } = (this.window_abort = new AbortController());
    this.want_from = from;
    this.loading_window = true;
    try {
      const patterns = await this.fetch_window(text, from, Math.min(T, from + WINDOW), () => my === this.window_seq, signal);
      if (!patterns) return;
      this.patterns = patterns;
      this.from = from;
    } catch (e) {
      if (my === this.window_seq) this.run_error = message(e);
    } finally {
      if (my === this.window_seq) {
        this.want_from = null;
        this.loading_window = false;
      }
    }
  }

  toggle_lock(position: number): void {
    this.locked = this.locked === position ? null : position;
  }

  /** Moves the window by `by` tokens from where it is going (clicks add up while it loads). */
  move_window(by: number): void {
    void this.show_from((this.want_from ?? this.from) + by);
  }
}
