// colour_scale.ts — the sequential colour scale of attention weights (0 → 1).
// ColorBrewer "Blues": one hue whose lightness alone carries the value, so it reads
// the same for every kind of colour vision and in greyscale.
const STOPS = ['#f7fbff', '#deebf7', '#c6dbef', '#9ecae1', '#6baed6', '#4292c6', '#2171b5', '#08519c', '#08306b'];

const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

/** The fill for a weight in [0, 1]: `rgb(r g b)`. */
export function weight_colour(weight: number): string {
  const w = Math.min(1, Math.max(0, weight));
  const x = w * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const t = x - i;
  const a = rgb(STOPS[i]);
  const b = rgb(STOPS[i + 1]);
  const [r, g, bl] = a.map((v, k) => Math.round(v + (b[k] - v) * t));
  return `rgb(${r} ${g} ${bl})`;
}

/** Text on a cell of this weight stays readable: light text from the middle of the scale up. */
export function weight_text_is_light(weight: number): boolean {
  return weight >= 0.5;
}

/** CSS gradient of the whole scale, for the legend. */
export function weight_gradient(): string {
  return `linear-gradient(to right, ${STOPS.join(', ')})`;
}

/** 0.9186 → "0.92": two decimals, as the lesson's tables print them. */
export function format_weight(weight: number): string {
  return weight.toFixed(2);
}
