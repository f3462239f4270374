// text.ts — the lesson's prose, in teaching order. No figure lives here: every number on the
// page is computed by the server (the engine's own code) while the learner watches.
export const LESSON_ID = 'word-order';

// Words the built-in tokenizer keeps whole, so the shuffle moves words, not fragments.
export const ORDER_SENTENCE = 'the man sent his men to the mill by the river';
// The offset challenge's starting pairs: different offsets, so the defaults never agree.
export const START_PAIRS: [[number, number], [number, number]] = [
  [5, 2],
  [9, 3],
];

export const citations = {
  haviv: { text: 'Haviv et al. 2022', url: 'https://arxiv.org/abs/2203.16634' },
  kazemnejad: { text: 'Kazemnejad et al. 2023', url: 'https://arxiv.org/abs/2305.19466' },
  vaswani: { text: 'Vaswani et al. 2017', url: 'https://arxiv.org/abs/1706.03762' },
  su: { text: 'Su et al. 2021', url: 'https://arxiv.org/abs/2104.09864' },
};

export const lesson_text = {
  lede:
    'Attention ignores order unless positions are added, or rotated in. A head compares every [[query]] with ' +
    'every [[key]] by a dot product, and a dot product does not know where either token sits. This lesson shows ' +
    'that, then the three ways models are told where words are, with numbers the engine computes as you read.',
  no_model:
    'Parts 1 and 2 read the built-in model, and the server has none loaded right now. Start it with ' +
    '`headlab serve` (the built-in model) or `headlab serve --model DIR`. Part 3 works without a model.',

  order: {
    title: 'Part 1 · Order is invisible without positions',
    intro:
      'Take the first layer of the built-in model and give one head only the token embeddings, with no position ' +
      'vectors and no mask: its [[score]] for a query and a key is q·k/√HS (HS is the [[head-size|head size]]), and both come from the tokens alone. ' +
      'The grid shows that content-only pattern on your sentence.',
    predict:
      'Now shuffle the words. Before the new grid shows, pick where the highlighted token will look most.',
    after_permuted: (gap: number) =>
      `Every cell of the shuffled grid is the first grid's cell for the same two tokens (they differ by at most ${gap.toFixed(4)}): ` +
      'each row and each column moved with its word. Without positions, a head sees a bag of tokens: order is invisible to it.',
    after_not_permuted: (gap: number) =>
      `The shuffled grid is not the first one permuted: some cells differ by ${gap.toFixed(2)}. Something in this head sees order.`,
    reveal_cost:
      'Showing the new grid first shows the answer: the server remembers it, and this challenge can no longer be ticked.',
    spent:
      'This shuffle’s grid stays hidden, since it would show the answer: press “Shuffle again” and predict once more.',
    twist_title: 'The twist: the causal mask leaks position',
    twist:
      'Real language models use a causal mask: token t may only read tokens 0 to t. That alone tells a model ' +
      'something about where it is: the first token can only look at itself, the tenth spreads over ten. ' +
      'Models trained with no position vectors at all still learn where they are (Haviv et al. 2022), and can ' +
      'generalise to longer texts better than some models with positions (Kazemnejad et al. 2023). How much a ' +
      'small model learns from the mask alone is a matter of numbers. Below, the head of headlab-nopos (trained ' +
      'without positions) that the scanner finds looking most at the token before, on your sentence.',
    twist_caption:
      'The same sentence through that head, with the causal mask. Cells one step below the diagonal are its weight on the token before.',
  },

  added: {
    title: 'Part 2 · Added: learned and sinusoidal positions',
    intro:
      'GPT-2 adds a vector to each token embedding that depends only on the position: row t of a table, [[wpe|wpe]], ' +
      'learned like every other weight. The first grid shows how alike the built-in model\u2019s rows are ' +
      '(cosine similarity, 1 on the diagonal). The second shows the [[sinusoidal|sinusoids]] Vaswani et al. 2017 used ' +
      'instead: fixed waves, sin and cos of t at geometrically spaced frequencies, never trained.',
    challenge:
      'Pick a position and guess which other position\u2019s vector is most like it. The grid hides that row ' +
      'until you guess right. A wrong guess is told how far off it is, never the answer.',
    reveal_cost:
      '\u201cShow the answer\u201d shows the row: the server remembers it, and this challenge can no longer be ticked.',
  },

  rotated: {
    title: 'Part 3 · Rotated in: RoPE',
    intro:
      '[[rope|Rotary position embedding]] (Su et al. 2021) adds nothing to the embeddings. Instead it turns q and k ' +
      'just before their dot product: each pair of channels (i, i + HS/2) turns by the angle ' +
      'position × θ^(−2i/HS), where θ is the [[theta|RoPE base]]. Pair 0 turns one radian per token; the last pairs turn so slowly that they ' +
      'barely move over a whole text.',
    dial:
      'Drag the dot, or use the arrow keys, to move q along the text. The two arrows are pair i of q at ' +
      'position m and of k at position n, as the engine\u2019s rotary code turns them.',
    offset:
      'Because both vectors turn, only the angle between them counts: q at m and k at n give the same q·k as ' +
      'q at m + s and k at n + s. Find two pairs far apart whose q·k agree.',
    decay: (pairs: number, at0: number, low: { offset: number; dot: number }, last: { offset: number; dot: number }) =>
      `With q = k = all ones, each pair of channels is a vector of length \u221a2 in q and in k, so it adds ` +
      `2 \u00d7 cos(offset \u00d7 frequency) to q\u00b7k: q\u00b7k is twice the sum of the cosines over the ${pairs} pairs. ` +
      `At offset 0 every cosine is 1, so the curve starts at ${Math.abs(at0 - 2 * pairs) < 0.01 ? `2 \u00d7 ${pairs} = ` : ''}${at0.toFixed(2)}; ` +
      `its lowest point here is ${low.dot.toFixed(2)} at offset ${low.offset}, and at offset ${last.offset} it is ${last.dot.toFixed(2)}. ` +
      'It falls unevenly as the fast pairs fall out of step while the slow ones stay near 1: the gentle fading with distance Su et al. point out.',
    calculator:
      'A pair needs 2π/frequency tokens to turn once: its wavelength. A pair whose wavelength is far longer ' +
      'than the context never turns far, so it carries no position within it. Choose a base θ and a head size.',
  },

  trained: {
    title: 'Part 4 · What trained heads do with each',
    intro:
      'Three small models headlab trained on the same data with the same budget, differing only in their ' +
      'positions: none, learned, rotary. The head scanner scores each on its held-out text: the best ' +
      '[[previous-token-head|previous-token head]] and the best [[induction-head|induction head]], beside what a head that spreads evenly would score ([[even-spread|the even spread]]).',
    bands:
      'Where in the text does each model find the token before? Each line is its previous-token head\u2019s mean ' +
      'weight on the token just before the query, for queries at those positions of the scanner\u2019s texts, and ' +
      'in brackets what an even spread over the keys would give. Learned and rotary positions tell a model ' +
      'exactly which key sits one step back. Without positions the only clue is the causal mask: a query at ' +
      'position t averages over t + 1 keys, which changes by about 1/t from one position to the next.',
    length:
      'Each model was trained on texts of a fixed length. Measure its loss at every position of a held-out ' +
      'text: inside the trained length, and past it where the model allows.',
    // Which model predicts best inside its trained length, and what that does and does not say.
    loss_reading: (rows: { title: string; positions: string; inside: number }[]) => {
      const sorted = [...rows].sort((a, b) => a.inside - b.inside);
      const [best, next] = sorted;
      const list = sorted.map((r) => `${r.title.toLowerCase()} ${r.inside.toFixed(3)}`).join(', ');
      const gap = next.inside - best.inside;
      if (gap < 0.005)
        return `Inside the trained length the measured models are level (${list} nats): a difference under 0.005 nats is no ranking.`;
      const head =
        best.positions === 'none'
          ? `The model with no positions has the lowest loss inside the trained length (${list} nats), ${gap.toFixed(3)} below the next. ` +
            'That does not mean positions are useless: loss is one average over every token of one text, and on short windows ' +
            'the causal mask already tells a model roughly where it is. It says how well a model predicts, not which heads ' +
            'find order or how; the previous-token lines above say that.'
          : `The ${best.title.toLowerCase()} model has the lowest loss inside the trained length (${list} nats), ${gap.toFixed(3)} below the next. ` +
            'Loss is one average over every token of one text: it says how well a model predicts, not which heads find order or how.';
      return head;
    },
    learned_limit:
      'A model with learned positions has no vector for a position past its table, so the engine cannot run it there at all.',
  },

  quiz: {
    title: 'Quiz',
    question:
      'A model has no position vectors but a causal mask. Its first-layer head gives every visible key the same ' +
      'weight. What does the head\u2019s output tell the next layer?',
    choices: [
      { id: 'nothing', text: 'Nothing about position: attention ignores order.' },
      { id: 'count', text: 'How many tokens came before: each token averages over t + 1 tokens, so its output shrinks in a way that depends on t.' },
      { id: 'previous', text: 'Which token came just before it.' },
    ],
    answer: 'count',
    explanation:
      'Token t averages t + 1 value vectors, so for instance the share of the first token in its output is ' +
      '1/(t + 1). That number differs at every position: a later layer can read where it is from it. This is how ' +
      'models without positions still learn them (Haviv et al. 2022).',
  },

  // The lesson's closing points, in general terms (no result of a particular input is stated here).
  recap: [
    'A dot product of a [[query]] and a [[key]] does not know where either token sits: without positions a head sees a bag of tokens, and shuffling the words only moves its rows and columns.',
    'The [[causal-mask|causal mask]] leaks a little position: token t spreads over t + 1 keys, so a model trained without positions can still learn roughly where it is.',
    'GPT-2 adds a learned vector per position ([[wpe]]); the original transformer added fixed [[sinusoidal|sinusoids]]. Either way the position travels inside the token\u2019s vector.',
    '[[rope|RoPE]] turns q and k instead, each pair of channels at its own speed set by the [[theta|base θ]], so q·k depends only on how far apart the two tokens are.',
    'Which scheme a model uses changes which heads it grows and how far past its trained length it can read; a lower [[loss]] alone does not say which heads find order.',
  ],

  programs: {
    title: 'RoPE in a few lines',
    intro:
      'The same rotation in NumPy and through headlab\u2019s C++ engine (model::rope_forward, the code the ' +
      'rotary models run). The build ran both; what you see under each is what it printed. The last digit ' +
      'can differ: the engine works in float32, NumPy in float64.',
  },
};
