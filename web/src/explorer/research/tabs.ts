// tabs.ts — the explorer's views: every head on a text (the explorer as it was), and the
// research toolbox's (docs/research.md). The open one is `?view=` in the address, so a view
// can be linked and reloaded.
export type ExplorerTab = 'heads' | 'patching' | 'path' | 'lens' | 'circuit';

export const EXPLORER_TABS: { tab: ExplorerTab; title: string }[] = [
  { tab: 'heads', title: 'Heads' },
  { tab: 'patching', title: 'Patching' },
  { tab: 'path', title: 'Path patching' },
  { tab: 'lens', title: 'Logit lens' },
  { tab: 'circuit', title: 'Circuit' },
];

/** The tab an address names (`?view=patching`), or null: none, or not a view. */
export function tab_of(search: string): ExplorerTab | null {
  const v = new URLSearchParams(search).get('view');
  return EXPLORER_TABS.find((t) => t.tab === v)?.tab ?? null;
}

/** The address with the tab in it: the heads view, the explorer's first, leaves no key. */
export function with_tab(search: string, tab: ExplorerTab): string {
  const p = new URLSearchParams(search);
  if (tab === 'heads') p.delete('view');
  else p.set('view', tab);
  const s = p.toString();
  return s ? '?' + s : '';
}
