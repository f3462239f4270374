// text.ts — the lesson's prose, in teaching order. Numbers never live here: every
// figure on the page comes from the server.
export const lesson_text = {
  lede:
    'An attention head lets each token collect information from the other tokens. Here five small heads, ' +
    'built by hand, read the same sentence, each by its own rule, while the causal mask decides which tokens ' +
    'each position may see at all.',

  five_heads: {
    title: 'Five heads, one sentence',
    intro:
      'A head scores every pair of tokens. The causal mask then removes every key that comes after its query, ' +
      'and a softmax turns each row of scores into weights that add up to 1. Choose a head, then a query, and ' +
      'see which keys that query reads.',
    query_label: 'Query',
    query_hint: 'Arrow keys move the query once a token has focus.',
    steps_title: (token: string, query: number, head: string) => `How “${token}” (${query}) gets its row in the ${head} head`,
    steps_scores: (head: string, rule: string) =>
      `The ${head} head's rule gives each key a score: ${rule}. The column “why” says which part of the rule ` +
      'gave each score.',
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
    mask_note:
      'Then switch the causal mask off and go through the heads again. Previous token and First token hardly ' +
      'move: none of their high scores sit on later tokens, so the keys that become visible only get crumbs. ' +
      'Same word, Induction and Punctuation can change their answer entirely, because the copy, the follower or ' +
      'the full stop they are after may lie ahead.',
  },

  compare: {
    title: 'The rule beside a trained head',
    intro:
      'The Induction head above is a rule written by hand. A trained model grows its own induction head. Here both ' +
      'read the same repeated sentence, split into the model’s tokens, and the head scanner scores both the same ' +
      'way: on every token that already appeared earlier, how much weight goes to the token that followed that ' +
      'earlier copy.',
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
      'A transformer layer does not run one wide head. It cuts each token’s vector into h equal slices and ' +
      'gives every slice a head of its own. More heads means narrower heads, while the four projection matrices ' +
      'keep their size, so the layer has as many weights as before.',
  },
} as const;

/** The lesson's worked example: the second "cat" of its sentence. */
export const WORKED_EXAMPLE_QUERY = 7;
export const LESSON_ID = 'causal-mask';
/** The induction comparison's first sentence: one span, then the same span again, in words the
 *  built-in model's tokenizer keeps whole (no space before the full stops: " ." is two tokens). */
export const COMPARE_SENTENCE = 'the people of every country must work for peace. the people of every country must work for peace.';
export const FIRST_HEAD = 'induction';
