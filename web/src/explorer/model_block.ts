// model_block.ts — the explorer's words for a model's family and configured block
// (GET /api/model: config.family, config.block). Pure functions of the server's numbers.
import type { ModelConfig } from '../lib/types';

const FAMILY_NAMES: Record<string, string> = {
  gpt2: 'GPT-2',
  gpt_neox: 'GPT-NeoX (Pythia)',
  llama: 'Llama',
  mistral: 'Mistral',
  qwen2: 'Qwen 2',
  qwen3: 'Qwen 3',
  gemma2: 'Gemma 2',
  gemma3: 'Gemma 3',
};

/** "Gemma 3" for "gemma3"; an unknown family as the server names it. */
export function family_name(family: string | undefined): string {
  if (!family) return 'GPT-2';
  return FAMILY_NAMES[family] ?? family;
}

const number = (x: number) => (Number.isInteger(x) ? x.toLocaleString('en-US') : String(Number(x.toPrecision(4))));

/** "layers 0–2", "layer 4", "layers 0, 2 and 5". */
function layer_list(layers: number[]): string {
  if (layers.length === 1) return `layer ${layers[0]}`;
  const run = layers.every((l, i) => i === 0 || l === layers[i - 1] + 1);
  if (run) return `layers ${layers[0]}–${layers[layers.length - 1]}`;
  return `layers ${layers.slice(0, -1).join(', ')} and ${layers[layers.length - 1]}`;
}

export interface BlockLine {
  label: string; // "Positions", "Norm", "Attention", "MLP", "Windows"
  text: string;
}

/** One line for each part of the block; empty without config.block. */
export function block_lines(config: ModelConfig): BlockLine[] {
  const b = config.block;
  if (!b) return [];
  const NH = config.n_head;
  const lines: BlockLine[] = [];

  let positions = 'none: the model sees no word order but the causal mask';
  if (b.positions === 'learned') positions = `learned, one vector per position (up to ${number(config.n_ctx)})`;
  if (b.positions === 'rotary') {
    const part = b.rotary_dim === b.head_size ? 'all' : `${b.rotary_dim} of the`;
    positions = `rotary (RoPE) on ${part} ${b.head_size} channels of q and k, base θ = ${number(b.rope_theta)}`;
    const scaling = b.rope_scaling ?? 'none';
    const factor = number(b.rope_scaling_factor ?? 1);
    if (scaling === 'linear') positions += `, positions ÷ ${factor}`;
    else if (scaling.startsWith('llama3')) positions += `, Llama 3 scaling (slow frequencies ÷ ${factor})`;
    else if (scaling.startsWith('per-frequency')) positions += ', each frequency divided by its own factor (rope_freqs)';
    if (b.rope_local_theta) positions += `; sliding layers: base ${number(b.rope_local_theta)}, unscaled`;
  }
  lines.push({ label: 'Positions', text: positions });

  const norm = b.norm === 'layernorm' ? 'LayerNorm' : b.norm === 'rmsnorm_plus_one' ? 'RMSNorm × (1 + w)' : 'RMSNorm';
  const where = b.sandwich_norm ? 'before and after attention and MLP' : 'before attention and MLP';
  lines.push({ label: 'Norm', text: `${norm}, ${where}${b.qk_norm ? ', and on each head’s q and k' : ''}` });

  const KV = b.n_kv_head;
  let attention = `multi-head: ${NH} heads, each with its own keys and values`;
  if (KV === 1 && NH > 1) attention = `multi-query: all ${NH} query heads read one KV head`;
  else if (KV < NH) attention = `grouped-query: ${NH} query heads share ${KV} KV heads; query head h reads KV head ⌊h / ${NH / KV}⌋`;
  attention += `; scores × ${number(b.attention_scale)}`;
  if (b.attn_softcap > 0) attention += `, soft-capped at ${number(b.attn_softcap)}`;
  lines.push({ label: 'Attention', text: attention });

  if (config.mlp) {
    const kind = {
      gelu_tanh: 'GELU (tanh)',
      gelu_erf: 'GELU (erf)',
      swiglu: 'SwiGLU: down(silu(gate x) · up x)',
      geglu: 'GeGLU: down(gelu(gate x) · up x)',
    }[b.mlp_kind];
    lines.push({ label: 'MLP', text: `${kind}, ${number(b.d_mlp)} wide${b.parallel_residual ? '; in parallel with attention' : ''}` });
  } else {
    lines.push({ label: 'MLP', text: 'none (attention only)' });
  }

  const windows = new Map<number, number[]>();
  b.window.forEach((w, l) => windows.set(w, [...(windows.get(w) ?? []), l]));
  let window_text = 'every layer sees every earlier token';
  if (b.window.some((w) => w > 0)) {
    window_text = [...windows.entries()]
      .sort(([a], [b2]) => (a === 0 ? 1 : b2 === 0 ? -1 : a - b2))
      .map(([w, layers]) => `${layer_list(layers)} ${layers.length === 1 ? 'sees' : 'see'} ${w === 0 ? 'every earlier token' : `the last ${number(w)} tokens, itself included`}`)
      .join('; ');
  }
  lines.push({ label: 'Windows', text: window_text });
  if (b.final_softcap > 0) lines.push({ label: 'Logits', text: `soft-capped at ${number(b.final_softcap)}` });
  return lines;
}
