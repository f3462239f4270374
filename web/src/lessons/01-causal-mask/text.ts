// text.ts — the lesson's prose, in teaching order. Numbers never live here: every
// figure on the page comes from the server.
export const lesson_text = {
  lede:
    'An [[head|attention head]] lets each [[token]] collect information from the other tokens. Here five small heads, ' +
    'built by hand, read the same sentence, each by its own rule, while the [[causal-mask|causal mask]] decides which tokens ' +
    'each position may see at all.',

  five_heads: {
    title: 'Five heads, one sentence',
    intro:
      'A head [[score|scores]] every pair of tokens: the [[query]] is the token that looks, the [[key]] the token ' +
      'looked at. The causal mask then removes every key that comes after its query, and a [[softmax]] turns each ' +
      'row of scores into weights that add up to 1: the row of the [[pattern|attention pattern]]. Choose a head, ' +
      'then a query, and see which keys that query reads.',
    query_label: 'Query',
    query_hint: 'Arrow keys move the query once a token has focus.',
    steps_title: (token: string, query: number, head: string) => `How “${token}” (${query}) gets its row in the ${head} head`,
    steps_scores: (head: string, rule: string) =>
      `The ${head} head's rule gives each key a score: ${rule}. The column “why” says which part of the rule ` +
      'gave each score.',
  },

  passes_on: {
    title: 'What a head passes on',
    body:
      'The weights only say where a query reads. In a transformer, what it reads is each key\u2019s [[value]]: a ' +
      'vector the model makes from the key token. The head\u2019s output for the query is the sum of those value vectors, each ' +
      'multiplied by its weight (the pattern times the values), and one more matrix, W_O, turns that sum into ' +
      'something the model adds to the token\u2019s own vector, the [[residual-stream|residual stream]]. So a key with ' +
      'a large weight but a small value passes on little, and two heads with the same pattern can pass on ' +
      'different things. Lesson 2 meets heads where this matters.',
  },

  constructed_note: {
    title: 'Built by rule, not trained',
    body:
      'Nobody trained these heads. Each is a scoring rule written by hand, followed by a real causal mask and a ' +
      'real softmax. The rules copy patterns that researchers have found in trained models. A trained head gets ' +
      'its scores from learned query and key vectors instead, so it is rarely this tidy: it mixes several habits ' +
      'at once, and its weights are spread more thinly.',
  },

  try_this: {
    title: 'Try this',
    intro: (query: number) =>
      `Predict first, then look. For each head, guess which key position ${query}, the last token, ` +
      'gives the most weight; the real row appears once you have guessed.',
    // Mask off: the question moves to a position the mask changes (TryThis picks it from the
    // numbers); `heads` of `all` heads have a favourite key after it.
    intro_unmasked: (query: number, heads: number, all: number) =>
      heads === 0
        ? `With the mask off, no head's favourite key lies after any token of this sentence, so the mask changes ` +
          `no answer here; the question stays on the last token, ${query}.`
        : `With the mask off, the question moves to position ${query}: there ` +
          (heads === all ? 'every head has its' : `${heads} of the ${all} heads ${heads === 1 ? 'has its' : 'have their'}`) +
          ' favourite key after the query, where the mask would hide it. ' +
          'Predict again: which key does each head pick when it may look ahead?',
    mask_note: (last: number) =>
      `Then switch the causal mask off. The last token's row (${last}) would not change: no key comes after it, ` +
      'so the mask never hid anything from it. The question therefore moves to the position whose answer the ' +
      'mask changes for the most heads. Same word, Induction and Punctuation often change their answer there, ' +
      'because the copy, the follower or the full stop they are after lies ahead; Previous token and First ' +
      'token look only backwards, so the mask never changes what they pick.',
    mask_on_note:
      'The mask exists because a language model is trained to predict the next token from the ones before it. ' +
      'If a position could read the tokens after it, the answer would be in plain sight during training, and ' +
      'the model would learn to copy it instead of predicting it. Switch the mask back on to see the rows a real ' +
      'decoder uses.',
  },

  compare: {
    title: 'The rule beside a trained head',
    intro:
      'The Induction head above is a rule written by hand. A trained model grows its own [[induction-head|induction head]]. Here both ' +
      'read the same repeated sentence, split into the model’s tokens, and the head scanner scores both the same ' +
      'way, with its [[scanner-score|scanner score]]: on every token that already appeared earlier, how much weight ' +
      'goes to the token that followed that earlier copy, next to the [[even-spread|even spread]].',
    label: 'A sentence that repeats',
    run: 'Compare',
    repeat_mine: 'Use my sentence, twice',
    working: 'Running both heads…',
    no_model: 'This part needs the built-in model, which the server has not loaded. ',
    rule_title: 'Rule-built Induction head',
    model_title: (name: string, labelled: boolean) =>
      labelled ? `The model’s induction head, ${name}` : `The model’s best induction scorer, ${name} (not labelled induction)`,
    score: (score: string, chance: string) => `Scanner score ${score} (an even spread would score ${chance})`,
    // Chosen by the numbers as shown (two decimals): the trained head finds the follower only
    // when it gives it clearly more than an even spread would.
    reading: (queries: number, rule: string, name: string, trained: string, chance: string) => {
      const r = Number(rule), m = Number(trained), c = Number(chance);
      const scored = queries === 1 ? '1 token that appeared before' : `${queries} tokens that appeared before`;
      const numbers =
        `The scanner scored ${scored}. The rule gives the follower of the earlier copy ${rule} of a row on ` +
        `average; head ${name}, trained on text, gives ${trained}; a head spreading its weight evenly would give ${chance}. `;
      if (m <= c)
        return numbers + `Head ${name} gives the follower no more than an even spread would, so on this sentence it does not find it: its pattern alone does not show an induction head here.`;
      if (m < 2 * c)
        return numbers + `Head ${name} gives the follower more than an even spread, but less than twice as much: on this sentence it finds it only weakly.`;
      if (m < r)
        return numbers + 'The rule puts more of each row on the follower; the trained head finds it too, and spends the rest of its weight elsewhere.';
      return numbers + 'On this sentence the trained head matches the rule or beats it.';
    },
  },

  programs: {
    title: 'A masked attention head in a few lines',
    intro:
      'The same Induction head, twice: in a few lines of NumPy, and through headlab’s own C++ API. headlab ran ' +
      'both programs; what you see under each is what it printed.',
  },

  head_split: {
    title: 'Splitting the model width into heads',
    intro:
      'A transformer layer does not run one wide head. It cuts each token’s vector (its [[d-model|width]], d_model) ' +
      'into h equal slices and gives every slice a head of its own: each head\u2019s query, key and value vectors ' +
      'have d_model / h numbers, the [[head-size|head size]] (HS). More heads means narrower heads, while the four ' +
      'projection matrices (W_Q, W_K, W_V and W_O) keep their size, so the layer has as many weights as before.',
  },

  // The lesson's closing points: what the learner should take away, in general terms (no
  // result of a particular sentence is stated here).
  recap: [
    'A [[head|head]] gives each [[query]] a row of [[score|scores]], one per [[key]]; the [[softmax]] turns the row into weights that add up to 1.',
    'The [[causal-mask|causal mask]] sets the scores of later keys to −∞ before the softmax, so they get exactly 0: a model that learns to predict the next token must not see it. The last token\u2019s row never changes, because nothing comes after it.',
    'A head passes on the weighted sum of the keys\u2019 [[value|value vectors]], mapped by W_O into the [[residual-stream|residual stream]]: the pattern says where it reads, not what.',
    'Rule-built heads (previous token, first token, same word, [[induction-head|induction]], punctuation) copy habits found in trained models; a trained head mixes habits, and its score means something only next to the [[even-spread|even spread]].',
    'A layer splits the model\u2019s width into h heads of [[head-size|head size]] d_model / h; the number of weights stays the same.',
  ],
} as const;

/** The lesson's worked example: the second "cat" of its sentence. */
export const WORKED_EXAMPLE_QUERY = 7;
export const LESSON_ID = 'causal-mask';
/** The induction comparison's first sentence: one span, then the same span again, in words the
 *  built-in model's tokenizer keeps whole (no space before the full stops: " ." is two tokens). */
export const COMPARE_SENTENCE = 'the people of every country must work for peace. the people of every country must work for peace.';
export const FIRST_HEAD = 'induction';
