// descriptions.ts — what each lesson teaches, in a sentence or two, for the course page.
// Titles, order and "coming" come from the server (GET /api/lessons); this is prose only.
export const lesson_descriptions: Record<string, string> = {
  'causal-mask':
    'Five heads built by hand read one sentence. See how a head scores, masks and weighs every token, predict ' +
    'where each one looks, switch the causal mask off, and meet a trained induction head beside the rule.',
  'trained-heads':
    'The heads of a real trained model: read a pattern row by row, find the previous-token and induction heads, ' +
    'tell a sink from a head that reads the first token, and switch heads off to see what the model needs.',
  'word-order':
    'Attention alone cannot tell word order. Compare a model without positions, learned position vectors and ' +
    'rotary embeddings (RoPE), and see how each one lets a head find the token a fixed distance back.',
};
