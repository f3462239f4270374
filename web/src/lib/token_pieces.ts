// token_pieces.ts — a token drawn where its spaces and bytes matter: a space as "·" (so
// " the" and "the", two different tokens, look different, as lesson 2's token list draws
// them), and a piece of a multi-byte character, which alone spells no character, as its
// bytes beside the character it belongs to: "⟨E7⟩ of “的”" instead of "�".
import { hex_bytes, token_piece } from './heads';
import type { ModelToken } from './types';

/** The character around byte `begin` of a UTF-8 text: the sequence its first byte belongs to. */
export function character_at(bytes: Uint8Array, begin: number): { text: string; bytes: number[] } {
  let a = begin;
  while (a > 0 && (bytes[a] & 0xc0) === 0x80) --a;
  let b = a + 1;
  while (b < bytes.length && (bytes[b] & 0xc0) === 0x80) ++b;
  const own = Array.from(bytes.slice(a, b));
  return { text: new TextDecoder().decode(new Uint8Array(own)), bytes: own };
}

/** Spaces, newlines and tabs made visible: " the" → "·the". */
export const visible_spaces = (s: string) => s.replace(/ /g, '·').replace(/\n/g, '↵').replace(/\t/g, '⇥');

/**
 * Each token as the page draws it. text: what the tokens were cut from (their begin/end are
 * byte offsets into its UTF-8). A token of no bytes (the start token) is "⟨start⟩".
 */
export function drawn_tokens(tokens: ModelToken[], text: string): string[] {
  const bytes = new TextEncoder().encode(text);
  return tokens.map((t) => {
    if (t.begin === t.end) return '⟨start⟩';
    const piece = token_piece(bytes, t);
    if (piece.text !== null) return visible_spaces(piece.text);
    const ch = character_at(bytes, t.begin);
    return `⟨${hex_bytes(piece.bytes)}⟩ of “${ch.text}”`;
  });
}
