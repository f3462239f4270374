// glossary.ts — the course's words, defined once. Every lesson links its terms here (through
// Prose's [[id]] marks), and the glossary page (#/glossary) lists them all, so a word means
// the same thing in every lesson. Definitions say what the thing is and what it is for, in
// the course's own words; no numbers (those come from the server, on the lesson pages).
export interface GlossaryEntry {
  id: string; // the link target: #/glossary/<id>, and the [[id]] in lesson prose
  term: string; // as the heading shows it
  also?: string[]; // other names a reader may meet (papers, code)
  definition: string;
  lesson?: string; // the slug of the lesson that introduces it
}

export const glossary: GlossaryEntry[] = [
  {
    id: 'token',
    term: 'token',
    definition:
      'One piece of the text as the model sees it: a word, part of a word, a space and a word, a punctuation mark, or a ' +
      'single byte of a character the vocabulary has no piece for. A tokenizer turns text into a list of token ids.',
    lesson: 'causal-mask',
  },
  {
    id: 'position',
    term: 'position',
    definition: 'Where a token stands in the list, counted from 0. Attention itself does not know positions; lesson 3 shows how models add them.',
    lesson: 'causal-mask',
  },
  {
    id: 'head',
    term: 'attention head',
    also: ['head'],
    definition:
      'The part of a transformer layer that lets each token collect information from other tokens. For every query ' +
      'token it scores every key token, turns the scores into weights with a softmax, and passes on the weighted sum ' +
      'of the keys\u2019 value vectors. A layer runs several heads side by side; "head 1.4" is head 4 of layer 1.',
    lesson: 'causal-mask',
  },
  {
    id: 'query',
    term: 'query',
    also: ['q'],
    definition:
      'The token whose row is being computed: the one that is looking. In a trained head its query vector q is the ' +
      'token\u2019s residual vector times a learned matrix W_Q.',
    lesson: 'causal-mask',
  },
  {
    id: 'key',
    term: 'key',
    also: ['k'],
    definition:
      'A token being looked at. In a trained head its key vector k is its residual vector times W_K; the score of a ' +
      'query and a key is their dot product q·k divided by √HS.',
    lesson: 'causal-mask',
  },
  {
    id: 'value',
    term: 'value vector',
    also: ['value', 'v'],
    definition:
      'What a key token hands over when it is read: its residual vector times a learned matrix W_V. A head\u2019s output ' +
      'for a query is the sum of the value vectors weighted by the query\u2019s attention weights; the output matrix W_O ' +
      'then maps that sum back to the model\u2019s width and adds it to the residual stream. A key with a large weight ' +
      'but a small value vector passes on little.',
    lesson: 'causal-mask',
  },
  {
    id: 'score',
    term: 'attention score',
    also: ['logit'],
    definition:
      'How well a query and a key match, before the softmax: any real number. A rule-built head computes it from a ' +
      'rule; a trained head as q·k/√HS.',
    lesson: 'causal-mask',
  },
  {
    id: 'softmax',
    term: 'softmax',
    definition:
      'The step that turns a row of scores into weights: each weight is exp(score) divided by the sum of exp over the ' +
      'row, so every weight is positive and the row adds up to 1. Equal scores give equal weights; a score of −∞ gives 0.',
    lesson: 'causal-mask',
  },
  {
    id: 'pattern',
    term: 'attention pattern',
    also: ['attention weights', 'attention grid'],
    definition:
      'The grid of weights of one head on one text: one row per query, one column per key, each row adding up to 1. ' +
      'It says where the head reads from, not what it reads: that depends on the value vectors too.',
    lesson: 'causal-mask',
  },
  {
    id: 'causal-mask',
    term: 'causal mask',
    definition:
      'The rule that a query may not read keys after it: their scores are set to −∞ before the softmax, so they get ' +
      'weight 0. A decoder is trained to predict the next token from the tokens before it; without the mask every ' +
      'position could read the answer it is being trained to predict.',
    lesson: 'causal-mask',
  },
  {
    id: 'even-spread',
    term: 'even spread',
    also: ['chance', 'baseline'],
    definition:
      'The weight a head would give a key if it spread each row evenly over the keys it may see: 1/(q + 1) for query q ' +
      'under the mask. A share means something only against it: the same share is a lot on a long row and nothing on a short one.',
    lesson: 'causal-mask',
  },
  {
    id: 'head-size',
    term: 'head size',
    also: ['HS', 'd_head'],
    definition:
      'The length of one head\u2019s query, key and value vectors: the model width d_model divided by the number of heads h.',
    lesson: 'causal-mask',
  },
  {
    id: 'd-model',
    term: 'model width',
    also: ['d_model', 'n_embd'],
    definition: 'The length of the vector that stands for each token between layers (the residual stream).',
    lesson: 'causal-mask',
  },
  {
    id: 'residual-stream',
    term: 'residual stream',
    definition:
      'The vector each token carries from layer to layer. Every head and every MLP reads it and adds its output to it, ' +
      'so a later head can read what an earlier head wrote.',
    lesson: 'trained-heads',
  },
  {
    id: 'previous-token-head',
    term: 'previous-token head',
    definition: 'A head whose query reads mostly the token just before it.',
    lesson: 'causal-mask',
  },
  {
    id: 'induction-head',
    term: 'induction head',
    definition:
      'A head that completes a repeat: at a token that appeared earlier, it reads the token that followed the earlier ' +
      'copy, so the model can predict that the same token follows again. In trained models it works with a ' +
      'previous-token head in an earlier layer (Olsson et al. 2022).',
    lesson: 'causal-mask',
  },
  {
    id: 'attention-sink',
    term: 'attention sink',
    also: ['sink'],
    definition:
      'A head that parks much of its weight on the first token when it has nothing better to read (Xiao et al. 2023). ' +
      'If the first token\u2019s value vector is small, parking there passes on almost nothing.',
    lesson: 'trained-heads',
  },
  {
    id: 'bos',
    term: 'BOS token',
    also: ['beginning of sequence'],
    definition: 'A special token some models put before the text, so that every text starts the same way.',
    lesson: 'trained-heads',
  },
  {
    id: 'scanner-score',
    term: 'scanner score',
    definition:
      'The share of a head\u2019s weight that lands where a kind of head would look (the previous token, the follower of ' +
      'an earlier copy, the first token), averaged over the queries where that kind has a target. headlab\u2019s head ' +
      'scanner computes it for every head, trained or rule-built, the same way.',
    lesson: 'trained-heads',
  },
  {
    id: 'loss',
    term: 'loss',
    also: ['cross-entropy'],
    definition:
      'How surprised the model is by the token that really comes next: −log of the probability it gave that token. ' +
      'Lower is better; averaged over the text it is the number training makes small.',
    lesson: 'trained-heads',
  },
  {
    id: 'ablation',
    term: 'ablation',
    also: ['zeroing a head', 'knock-out'],
    definition:
      'Switching a part of the model off (here: setting a head\u2019s output to zero) and measuring what changes, most ' +
      'often the loss. It tests what a head does, which its pattern alone cannot.',
    lesson: 'trained-heads',
  },
  {
    id: 'wpe',
    term: 'learned position table',
    also: ['wpe', 'position embedding'],
    definition:
      'GPT-2\u2019s way to give tokens a position: a table with one learned vector per position (wpe), added to each ' +
      'token\u2019s vector before the first layer.',
    lesson: 'word-order',
  },
  {
    id: 'sinusoidal',
    term: 'sinusoidal positions',
    definition:
      'The original transformer\u2019s fixed position vectors (Vaswani et al. 2017): sines and cosines of the position at ' +
      'many wavelengths, added to the token vectors like wpe but not learned.',
    lesson: 'word-order',
  },
  {
    id: 'rope',
    term: 'rotary position embedding',
    also: ['RoPE'],
    definition:
      'Position given to a head by turning its query and key vectors: each pair of numbers is rotated by an angle ' +
      'proportional to the position, each pair at its own speed, so q·k depends on how far apart two tokens are ' +
      '(Su et al. 2021). Llama, Qwen, Mistral, Gemma and GPT-NeoX use it.',
    lesson: 'word-order',
  },
  {
    id: 'theta',
    term: 'RoPE base θ',
    also: ['rope_theta'],
    definition:
      'The number that sets how fast RoPE\u2019s pairs turn: pair i turns by θ^(−2i/HS) radians per token, so a larger θ ' +
      'gives the slow pairs longer wavelengths.',
    lesson: 'word-order',
  },
];

const by_id = new Map(glossary.map((e) => [e.id, e]));

/** The entry for an id; throws on an unknown id, so a typo in a lesson fails its tests. */
export function glossary_entry(id: string): GlossaryEntry {
  const entry = by_id.get(id);
  if (!entry) throw new Error(`glossary: no entry '${id}' (web/src/lib/glossary.ts)`);
  return entry;
}

export const glossary_href = (id?: string) => (id ? `#/glossary/${id}` : '#/glossary');

/** A piece of lesson prose: plain text, or a term linked to its entry. */
export type ProsePiece = { text: string } | { text: string; term: string };

/** Splits prose marked with [[id]] or [[id|shown words]] into text and linked terms. */
export function parse_prose(prose: string): ProsePiece[] {
  const pieces: ProsePiece[] = [];
  const mark = /\[\[([a-z0-9-]+)(?:\|([^\]]+))?\]\]/g;
  let at = 0;
  for (let m = mark.exec(prose); m; m = mark.exec(prose)) {
    if (m.index > at) pieces.push({ text: prose.slice(at, m.index) });
    const entry = glossary_entry(m[1]);
    pieces.push({ text: m[2] ?? entry.term, term: entry.id });
    at = m.index + m[0].length;
  }
  if (at < prose.length) pieces.push({ text: prose.slice(at) });
  return pieces;
}

/** The prose without its marks: what a test or a screen reader's summary compares against. */
export const plain_prose = (prose: string) => parse_prose(prose).map((p) => p.text).join('');
