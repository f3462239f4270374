// text.ts — the lesson's prose, in teaching order. No figure lives here: every number on
// the page is measured by the server on the loaded model while the learner watches.
export const LESSON_ID = 'trained-heads';

export const READING_SENTENCE = 'the cat sat on the mat';
// Demo texts of words the built-in tokenizer keeps whole, so the lesson's points do not
// drown in fragments (the tokens part shows how other words are cut).
export const INDUCTION_TEXT = 'the old man sent his men to the mill by the river';
export const TOKENS_TEXT = 'The committee met on Monday. Café ünïcödé 😀';
export const SINK_SENTENCE = 'the man said that his men will report to the market before the end of the year';

export const lesson_text = {
  running: 'Running the model on the new text… the figures below still show the previous one.',

  lede:
    'In the first lesson every head followed a rule someone wrote down. Here the heads were trained: a small ' +
    'transformer learnt them from text, and nobody told it what to look for. Every pattern below comes from ' +
    'that model, run by the server as you read.',

  no_model:
    'This lesson needs a trained model, and the server has none loaded right now. Start it with ' +
    '`headlab serve` (the built-in model) or `headlab serve --model DIR`.',

  reading: {
    title: 'Part 1 · Reading an attention pattern',
    intro:
      'Run a trained model over a text and keep the weights of one head: you get a grid, its [[pattern|attention pattern]], with a row for each ' +
      'token that looks (the [[query]]) and a column for each token it can look at (the [[key]]). The [[causal-mask|causal mask]] ' +
      'empties everything above the diagonal, since no token may read one that comes after it. The model ' +
      'also reads an invisible start token, ⟨start⟩ (a [[bos|BOS token]]), before the text.',
    which_head: (name: string, labelled: boolean) =>
      labelled
        ? `This is head ${name} of the model: of the heads the scanner labels previous-token, it clears the bar by the most.`
        : `No head of this model passes the scanner’s bar for a previous-token head yet. Head ${name} comes closest, so you see it here; expect a weaker stripe than a fully trained model draws.`,
    no_head: 'The head scanner has not reported yet, so no head can be picked.',
    step_intro: 'Read the grid one row at a time.',
    row_text: (query: string, prev: string, share: string, favourite: string, fav_share: string) =>
      `The row of “${query}” gives ${share} of its weight to “${prev}”, the token right before it. ` +
      `Its largest weight goes to “${favourite}” (${fav_share}).`,
    first_row: 'The first row belongs to ⟨start⟩. It has nothing else to read, so all of its weight sits on itself.',
    stripe: (mean_share: string, labelled: boolean) =>
      labelled
        ? `Row after row the same thing happens, whichever words are involved: on average this head gives ` +
          `${mean_share} of a row to the token just before. In the grid that is a bright line one cell left of the diagonal.`
        : `On average this head gives ${mean_share} of a row to the token just before. A true previous-token head ` +
          'gives most of every row to it, which draws a bright line one cell left of the diagonal.',
    next_row: 'Next row',
    previous_row: 'Previous row',
    steps_title: (token: string, query: number, head: string) => `How “${token}” (${query}) gets its row in head ${head}`,
    steps_scores: (head: string, hs: number) =>
      `Head ${head} turns the query token into a query vector q and every key token into a key vector k, both ` +
      `${hs} numbers long; a key's score is q·k/√${hs}. The engine's forward computes the scores of the keys up to ` +
      'the query; the later ones, which the mask will throw away, come from the same q and k it recorded.',
    quiz_title: 'Your turn',
    quiz_question: 'A head’s job is to pass along the word right before each token. Which pattern does it draw?',
    choices: [
      { id: 'diagonal', title: 'Along the diagonal', detail: 'each row weighs itself' },
      { id: 'first-column', title: 'Down the first column', detail: 'every row weighs the first token' },
      { id: 'below-diagonal', title: 'Just below the diagonal', detail: 'row i weighs column i − 1' },
      { id: 'uniform', title: 'Evenly spread', detail: 'each row splits its weight over every visible key' },
    ],
    check: 'Check my answer',
    reveal: 'Show the answer',
    answer:
      'Just below the diagonal. Row i puts its weight on column i − 1, the token before it: a previous-token ' +
      'head, like the one above. They are among the easiest heads to recognise, and they turn up in trained ' +
      'models of every size.',
  },

  tokens: {
    title: 'Before the heads · The model reads pieces of words',
    intro:
      'In the first lesson every [[token]] was a whole word. A trained model reads tokens its tokenizer learnt ' +
      'from text by byte-pair encoding: frequent words are one token, rarer ones are cut into pieces, and a ' +
      'character the tokenizer rarely saw is cut into its bytes. A row or a column of every grid below is one ' +
      'of these pieces. Type your own text to see how this model cuts it.',
    text_label: 'Text to split into tokens',
    list_label: 'The tokens of your text, in order',
    count: (chars: number, bytes: number, tokens: number, words: number, split: number) =>
      `${chars} characters, ${bytes} bytes in UTF-8, ${tokens} tokens. ` +
      `${split} of its ${words} words ${split === 1 ? 'is' : 'are'} cut into more than one token.`,
    span: (begin: number, end: number, id: number) => `bytes ${begin}–${end} · id ${id}`,
    byte_piece: (ch: string, bytes: string) => `part of “${ch}” (${bytes})`,
    note:
      'A dashed box is a single byte of a character that takes two to four bytes in UTF-8: alone it spells no ' +
      'character, so it is shown as its byte in hexadecimal. The spans count bytes, not characters. A dot (·) ' +
      'is a space, which the tokenizer keeps at the start of the word that follows it.',
  },

  induction: {
    title: 'Part 2 · Heads that continue a pattern',
    intro:
      'An [[induction-head|induction head]] completes repeats. When the current token appeared earlier, it looks at the token ' +
      'that followed the earlier copy, and helps predict that the same thing comes next. It can only do that ' +
      'with help from a head in an earlier layer: a [[previous-token-head|previous-token head]] writes into each position “the token ' +
      'before me was X” (in the [[residual-stream|residual stream]]), and the induction head’s keys read that note (K-composition). ' +
      'The [[loss]] below measures how well the model predicts each next token. Induction heads need ' +
      'something repeated to fire on, so repeat your text.',
    text_label: 'Your text',
    run: 'Run the model',
    repeat: 'Repeat it',
    find: 'Which head is the induction head? Pick heads and look for a stripe that runs parallel to the diagonal, one copy-length to the left, starting where the second copy begins.',
    check: 'Is this the induction head?',
    chosen: (name: string) => `Head ${name} on your text`,
    builds_on: (name: string) => `Head ${name}, the previous-token head it builds on`,
    loss_title: 'Loss on each next token',
    loss_second_copy: (first: string, second: string, fell: boolean) =>
      `Mean loss on the first copy: ${first}. On the second copy: ${second}. ` +
      (fell
        ? 'Having read the text once, the model predicts the repeat far better: that is its induction heads at work.'
        : 'The loss did not fall on the repeat: this model has not learnt to continue a pattern it has seen.'),
    not_repeated: 'Press “Repeat it” to see the loss fall on the second copy.',
    phase_title: 'When induction heads appear during training',
    phase_intro:
      'Olsson et al. (2022) saw induction heads form suddenly, in a short window of training, and the loss ' +
      'drop in the same window: a phase change. The committed log of this model’s training run lets you look ' +
      'for the same thing.',
    no_log: 'This model came without a training log, so its training run cannot be plotted.',
  },

  sinks: {
    title: 'Part 3 · Heads that park on the first token',
    intro:
      'A [[softmax]] always hands out all of a row’s weight: it cannot say “nothing here is worth reading”. Many ' +
      'trained heads therefore keep their spare weight on the first token, where it does little harm. Such a ' +
      'head is called an [[attention-sink|attention sink]] (Xiao et al. 2023). The first token’s [[value|value vector]] is often small, ' +
      'so the weight parked on it carries almost nothing into the output.',
    scanner_text: (tokens: number | null) =>
      `First, what the head scanner says, from its own held-out text${tokens ? ` (${tokens} tokens)` : ''}, not from yours: `,
    scanner_found: (names: string) => `it labels these heads as sinks: ${names}.`,
    scanner_none: 'it labels no head of this model a sink.',
    scanner_first: (names: string) =>
      ` It labels these as first-token heads, which weigh the first token heavily but do take something from it: ${names}.`,
    own_text:
      'Everything below is measured on the text in this box, and the check uses the same text. What tells a sink ' +
      'from a head that reads the first token is the value-weighted share: a sink keeps less than half of its ' +
      'first-token share once the values are weighed in, because what it fetches from there is small.',
    find: 'Find a head that puts at least half of its attention on the first token, then say what it is.',
    question: 'On this text, the head you picked is…',
    answers: [
      { id: 'sink', label: 'a sink: it parks weight on the first token and fetches little from it' },
      { id: 'reads-first', label: 'a head that reads the first token: it does fetch something from it' },
    ],
    check: 'Check my answer',
    raw: (name: string) => `Head ${name}: attention weights`,
    weighted: (name: string) => `Head ${name}: value-weighted`,
    weighted_intro:
      'The value-weighted view scales each weight by how large the value it fetches is, then normalises each ' +
      'row again (Kobayashi et al. 2020). It shows how much each key actually contributes to the output.',
    share: (text: string, head: string, raw: string, weighted: string) =>
      `On “${text}”, head ${head} gives the first token ${raw} of its rows’ weight in the attention weights, ${weighted} once the values are taken into account (averaged over the rows from the third token on: before it, the first token is also the one just before).`,
    other_title: 'A sink in another model',
    other_intro: (model: string, head: string, first: string, weighted: string) =>
      `This model has none, so here is one from ${model}, one of the small models trained here for lesson 3 (learned positions). ` +
      `On its held-out text the scanner labels head ${head} a sink: it gives the first token ${first} of its weight, ` +
      `${weighted} once the values are weighed in. Here it is on your text:`,
    other_reading: (head: string, text: string, first: string, weighted: string, parks: boolean, rows: number) =>
      rows === 0
        ? `“${text}” is too short to tell: from the third token on there are no rows to average.`
        : `On “${text}”, head ${head} gives the first token ${first} of its rows’ weight and ${weighted} once the values are weighed in: ` +
          (parks
            ? 'less than half, so here too it parks its weight there and fetches little. That is a sink.'
            : 'at least half, so on this text it does fetch something from the first token: a sink on one text can read the first token on another. Try a longer sentence.'),
    other_none: 'None of the lesson models the server has finds a sink either, so there is none to show here.',
    compare: 'Compare the two interventions',
    compare_intro:
      'Two ways to test whether the parked weight matters. Zeroing the whole head’s output approximates “the ' +
      'first token’s value carries nothing” for a head that parks almost everything there. Blocking attention ' +
      'to the first token instead forces the softmax to put that weight on the other tokens.',
    baseline: 'No intervention',
    ablated: 'Head output zeroed',
    blocked: 'Attention to the first token blocked',
    compare_on: (text: string) => `Mean loss of the model’s next-token predictions on “${text}”.`,
    compare_reading: (head: string, zeroed: number, blocked: number) => {
      const d = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}`;
      const small = 0.01;
      if (Math.abs(zeroed) < small && Math.abs(blocked) < small)
        return `Both changes are under ${small} nats (${d(zeroed)} and ${d(blocked)}): on this text the model barely notices what head ${head} does with the first token.`;
      if (Math.abs(blocked) > Math.abs(zeroed))
        return `Blocking the first token changes the loss more than zeroing the whole head (${d(blocked)} against ${d(zeroed)} nats): ` +
          `the weight head ${head} parks there matters, because spread over the other tokens it fetches things the model does not want.`;
      return `Zeroing the whole head changes the loss more than blocking its first token (${d(zeroed)} against ${d(blocked)} nats): ` +
        `what head ${head} fetches from the other tokens matters more than the weight it keeps on the first one.`;
    },
  },

  limits: {
    title: 'Part 4 · What patterns don’t tell you',
    intro:
      'A pattern says where a head looks, not what it does with what it finds, nor whether the model needs it. ' +
      'Jain & Wallace (2019) found that quite different attention weights can give the same predictions; ' +
      'Wiegreffe & Pinter (2019) answered that whether attention “explains” depends on what you test. The ' +
      'only way to settle what a head does is to change it and watch the output.',
    ablate_title: 'Switch a head off',
    ablate_intro: 'Pick a head, zero its output (an [[ablation]]), and compare the model’s [[loss]] and its next-token guesses with and without it.',
    ablate: 'Zero this head',
    measure_all: 'Measure every head',
    measure_all_intro: 'The loss increase from zeroing each head in turn, on the same text:',
    check: 'Does this head matter here?',
    loss_change: (before: string, after: string, delta: string) => `Loss ${before} → ${after} (${delta}).`,
    // Chosen by the change as shown (three decimals): what a zeroed head's effect says.
    loss_reading: (head: string, delta: number) => {
      const shown = Number(delta.toFixed(3));
      if (shown === 0)
        return `To three decimals the loss does not move: on this text the model does not need head ${head}, whatever its pattern looks like.`;
      if (shown < 0)
        return `The loss went down: the model predicts this text slightly better without head ${head}. Training makes a head ` +
          'help on average over a great deal of text, not on every text; here what it writes into the residual stream ' +
          'pulls the predictions the wrong way. Its pattern could not have told you that.';
      return `The loss went up: on this text the model uses what head ${head} writes.`;
    },
    // Chosen by the sweep's numbers: how many heads lower the loss when zeroed, and where the
    // heads the scanner labels induction rank among all heads.
    all_reading: (rows: { name: string; delta: number; induction: boolean }[]) => {
      const ranked = [...rows].sort((a, b) => b.delta - a.delta);
      const parts: string[] = [];
      const top = ranked[0];
      parts.push(`Zeroing head ${top.name} costs the most here (${top.delta >= 0 ? '+' : '−'}${Math.abs(top.delta).toFixed(3)}).`);
      const lower = ranked.filter((r) => Number(r.delta.toFixed(3)) < 0).length;
      if (lower > 0)
        parts.push(`${lower === 1 ? 'One head lowers' : `${lower} heads lower`} the loss when zeroed: on this text the model does better without ${lower === 1 ? 'it' : 'them'}.`);
      const induction = ranked.map((r, i) => ({ ...r, rank: i + 1 })).filter((r) => r.induction);
      if (induction.length === 0) parts.push('The scanner labels no head of this model induction.');
      for (const r of induction.slice(0, 2)) {
        if (r.rank === 1) parts.push(`The induction head ${r.name} is the one the model needs most on this text.`);
        else
          parts.push(
            `The induction head ${r.name} ranks ${r.rank} of ${ranked.length}: ${r.rank - 1 === 1 ? 'one head matters' : `${r.rank - 1} heads matter`} more on this text. ` +
              'A label says what a head\u2019s pattern looks like, not how much the model leans on it: heads with no ' +
              'striking pattern can carry more of the prediction, and on a text with little to repeat an induction head has little to do.',
          );
      }
      return parts.join(' ');
    },
    predictions_at: (token: string) => `What the model predicts after “${token}”`,
    views_title: 'Raw, value-weighted, rollout',
    views_intro:
      'Three readings of where one query gets its information. Raw weights are the pattern itself. ' +
      'Value-weighted (Kobayashi et al. 2020) scales them by the size of what each key passes on. Rollout ' +
      '(Abnar & Zuidema 2020) multiplies the patterns of every layer, averaged over heads and with the ' +
      'residual stream added, to follow information back to the input tokens.',
    view_raw: 'Raw weights',
    view_weighted: 'Value-weighted',
    view_rollout: 'Attention rollout (all layers)',
    twins_title: 'Two heads that look alike',
    twins_intro:
      'Of all pairs of heads in the same layer, these two draw the most similar patterns on your text. ' +
      'Zero each one and see whether they also do the same job.',
    sources_title: 'Sources',
  },

  // The lesson's closing points, in general terms (no result of a particular text is stated here).
  recap: [
    'A trained model reads [[token|tokens]] its tokenizer learnt: whole words, pieces of words, or single bytes; every row and column of a grid is one of them.',
    'A [[previous-token-head|previous-token head]] draws a line just below the diagonal; an [[induction-head|induction head]] draws a stripe one copy-length to the left on a repeated text, and the [[loss]] falls on the repeat when it works.',
    'Judge a head\u2019s share against the [[even-spread|even spread]] for that row: a share means little until it clearly beats chance.',
    'An [[attention-sink|attention sink]] parks weight on the first token and fetches little from it; the value-weighted view tells it from a head that really reads the first token.',
    'A pattern says where a head looks, not what the model needs: only an [[ablation]] (switching the head off and measuring the loss) says that, and its answer can surprise, in both directions.',
  ],
} as const;

export const citations = [
  { authors_year: 'Jain & Wallace 2019', title: 'Attention is not Explanation', url: 'https://arxiv.org/abs/1902.10186' },
  { authors_year: 'Wiegreffe & Pinter 2019', title: 'Attention is not not Explanation', url: 'https://arxiv.org/abs/1908.04626' },
  { authors_year: 'Kobayashi et al. 2020', title: 'Attention is Not Only a Weight: Analyzing Transformers with Vector Norms', url: 'https://arxiv.org/abs/2004.10102' },
  { authors_year: 'Abnar & Zuidema 2020', title: 'Quantifying Attention Flow in Transformers', url: 'https://arxiv.org/abs/2005.00928' },
  { authors_year: 'Olsson et al. 2022', title: 'In-context Learning and Induction Heads', url: 'https://arxiv.org/abs/2209.11895' },
  { authors_year: 'Xiao et al. 2023', title: 'Efficient Streaming Language Models with Attention Sinks', url: 'https://arxiv.org/abs/2309.17453' },
] as const;
