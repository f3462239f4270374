// notebook/main.ts — the entry of the notebook build (vite.notebook.config.ts): one
// self-contained script that defines `headlabViews`, so a Jupyter cell draws the explorer's own
// components (python/headlab/views.py writes `<div id=…></div><script>BUNDLE; headlabViews.render(…)</script>`).
//   headlabViews.render(element, 'pattern', PatternData)   HeadPatternFigure per head (the lessons' grid)
//   headlabViews.render(element, 'patching', PatchData)    PatchHeatmap per panel, as the explorer's PatchingView
//   headlabViews.render(element, 'patch_compare', PatchCompareData)   the two side by side, as the explorer's PatchCompare
//   headlabViews.render(element, 'lens', LensData)         LensTable, as the explorer's LensView
// The data shapes are in views.ts; the component CSS comes inside the script (css: 'injected').
import { mount } from 'svelte';
import NotebookView from './NotebookView.svelte';
import type { ViewKind } from './views';

export function render(element: HTMLElement, kind: ViewKind, data: unknown): void {
  if (!element) throw new Error('headlabViews.render: no element to draw into');
  mount(NotebookView, { target: element, props: { kind, data } });
}
