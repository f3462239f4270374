// tabs.ts — the explorer's views: every head on a text (the explorer as it was), and the
// research toolbox's three (docs/research.md).
export type ExplorerTab = 'heads' | 'patching' | 'lens' | 'circuit';

export const EXPLORER_TABS: { tab: ExplorerTab; title: string }[] = [
  { tab: 'heads', title: 'Heads' },
  { tab: 'patching', title: 'Patching' },
  { tab: 'lens', title: 'Logit lens' },
  { tab: 'circuit', title: 'Circuit' },
];
