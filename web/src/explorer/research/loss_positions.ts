// The loss metric's positions as the patching view's field reads them (POST /api/model/patch's
// "loss_positions"; docs/research.md, "Activation patching"): "9:16" is positions 9 to 15, whose
// next-token losses (position t's is token t+1's) the loss metric averages, TransformerLens's
// loss_per_token[:, 9:16]; "9:" runs to the end, ":16" from 0; blank: every position.

export interface LossPositions {
  from: number;
  to?: number; // absent: to the end
}

/** null for a blank field, the range, or a sentence saying what is wrong (the server checks the end). */
export function parse_loss_positions(text: string): LossPositions | null | string {
  if (text.trim() === '') return null;
  const m = /^\s*(\d*)\s*:\s*(\d*)\s*$/.exec(text);
  if (!m) return `Loss positions: “${text.trim()}” is not from:to, such as 9:16 (positions 9 to 15; 9: runs to the end).`;
  const from = m[1] === '' ? 0 : Number(m[1]);
  if (m[2] === '') return { from };
  const to = Number(m[2]);
  if (to <= from) return `Loss positions: ${from}:${to} is empty; from is included and to is not, as in 9:16.`;
  return { from, to };
}

/** "9:16", "9:" — the field's form of an answer's loss_positions. */
export function loss_positions_text(lp: { from: number; to?: number | null }): string {
  return `${lp.from}:${lp.to ?? ''}`;
}
