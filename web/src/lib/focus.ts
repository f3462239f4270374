// focus.ts — what a lesson step points the learner at. Steps set typed focus and the
// lesson's views follow it; no step ever reaches into the page with a CSS selector.
import type { HeadName } from './types';

export interface HeadFocus {
  head: HeadName;
  query: number; // row of the weights grid, 0-based token position
  mask?: boolean; // unchanged when absent
}
