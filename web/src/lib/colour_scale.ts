// colour_scale.ts — the sequential colour scale of attention weights (0 → 1).
// ColorBrewer "Blues": one hue whose lightness alone carries the value, so it reads
// the same for every kind of colour vision and in greyscale.
const STOPS = ['#f7fbff', '#deebf7', '#c6dbef', '#9ecae1', '#6baed6', '#4292c6', '#2171b5', '#08519c', '#08306b'];

const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

function weight_rgb(weight: number): number[] {
  const w = Math.min(1, Math.max(0, weight));
  const x = w * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const t = x - i;
  const a = rgb(STOPS[i]);
  const b = rgb(STOPS[i + 1]);
  return a.map((v, k) => Math.round(v + (b[k] - v) * t));
}

/** The fill for a weight in [0, 1]: `rgb(r g b)`. */
export function weight_colour(weight: number): string {
  const [r, g, b] = weight_rgb(weight);
  return `rgb(${r} ${g} ${b})`;
}

// WCAG relative luminance of an sRGB colour given as 0-255 channels.
function luminance([r, g, b]: number[]): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

const DARK_TEXT = [0, 0, 0]; // black: the only dark ink that keeps 4.5:1 across the whole scale

/** Light (white) text reads better than dark text on the cell of this weight. */
export function weight_text_is_light(weight: number): boolean {
  const fill = luminance(weight_rgb(weight));
  const on_white = (1 + 0.05) / (fill + 0.05);
  const on_dark = (fill + 0.05) / (luminance(DARK_TEXT) + 0.05);
  return on_white > on_dark;
}

/** CSS gradient of the whole scale, for the legend. */
export function weight_gradient(): string {
  return `linear-gradient(to right, ${STOPS.join(', ')})`;
}

/** 0.9186 → "0.92": two decimals, as the lesson's tables print them. */
export function format_weight(weight: number): string {
  return weight.toFixed(2);
}
