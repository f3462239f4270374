// focus.ts — what a lesson step points the learner at. Steps set typed focus and the
// lesson's views follow it; no step ever reaches into the page with a CSS selector.
import type { HeadName } from './types';

export interface HeadFocus {
  head: HeadName;
  query: number; // row of the weights grid, 0-based token position
  mask?: boolean; // unchanged when absent
}

/** What a step of the trained-heads lesson points at: one head of the model, one row. */
export interface ModelHeadFocus {
  head: { layer: number; head: number };
  query: number; // row of the pattern, 0-based token position (0 is the start token)
  view?: 'pattern' | 'value_weighted' | 'rollout';
}
