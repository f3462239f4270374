// lesson_page.mjs — the lesson as a learner sees it: locators by role and accessible
// name, so the tests read as what a person does ("pick the Induction head").
import { open_page } from './harness.mjs';

/**
 * The server, a browser and lesson 1 open once its summary shows (open_page's options):
 *   before(async () => ({ server, browser, page, problems, lesson, close } = await open_causal_mask_lesson()));
 *   after(() => close?.());
 */
export async function open_causal_mask_lesson(options = {}) {
  const s = await open_page(options);
  s.lesson = lesson_page(s.page);
  try {
    await s.lesson.summary.looks_at.waitFor();
  } catch (e) {
    await s.close();
    throw e;
  }
  return s;
}

export function lesson_page(page) {
  // The five heads' grid (the induction comparison further down has grids of its own).
  const five_heads = page.locator('section', { has: page.getByRole('heading', { level: 2, name: 'Five heads, one sentence' }) });
  const grid = five_heads.getByRole('table');
  const queries = page.getByRole('toolbar', { name: 'Query token' });
  const calculator = page.locator('section', { has: page.getByRole('heading', { name: 'Splitting the model width into heads' }) });
  const try_this = page.locator('section', { has: page.getByRole('heading', { name: 'Try this' }) });
  return {
    page,
    grid,
    head: (title) => page.getByRole('radio', { name: title, exact: true }),
    // A token button's name is what it shows: the word, then its position ("cat 7").
    query: (token, position) => queries.getByRole('button', { name: `${token} ${position}`, exact: true }),
    query_buttons: queries.getByRole('button'),
    selected_query: queries.locator('button[aria-pressed="true"]'),
    mask: page.getByRole('switch', { name: /Causal mask/ }),
    grid_rows: grid.locator('tbody tr'),
    grid_columns: grid.locator('thead th'), // the corner, then one per key
    masked_cells: grid.getByRole('cell', { name: 'masked', exact: true }),
    highlighted_row: grid.locator('tbody tr[aria-current="true"]'),
    caption: five_heads.locator('figure', { has: page.getByRole('table') }).locator('figcaption'),
    summary: {
      head: page.locator('dd[data-field="head"]'),
      query: page.locator('dd[data-field="query"]'),
      looks_at: page.locator('dd[data-field="looks-at"]'),
    },
    challenges_count: page.getByRole('status').filter({ hasText: /of \d+ complete/ }),
    challenge: (id) => page.locator(`li[data-challenge="${id}"]`),
    sentence_box: page.getByRole('textbox', { name: 'Your own sentence' }),
    sentence_show: page.getByRole('button', { name: 'Show', exact: true }),
    sentence_error: page.locator('#sentence-error'),
    calculator: {
      section: calculator,
      preset: (name) => calculator.getByRole('button', { name, exact: true }),
      h: calculator.getByRole('textbox', { name: /Number of heads/ }),
      d_model: calculator.getByRole('textbox', { name: /Model width/ }),
      d_k: calculator.locator('dd[data-field="d_k"]'),
      projection_weights: calculator.locator('dd[data-field="projection-weights"]'),
      shapes: calculator.getByRole('list', { name: 'Weight shapes' }),
      drawing: calculator.getByRole('img'),
      error: calculator.getByRole('alert'),
    },
    try_this,
  };
}

/** The text a grid row shows, cell by cell: "0.92" or "masked". */
export async function grid_row_values(lesson, query) {
  return lesson.grid_rows.nth(query).locator('td').evaluateAll((cells) =>
    cells.map((td) => (td.querySelector('.sr-only')?.textContent ?? '').trim()),
  );
}

/** What the API's weights row should look like in the grid. */
export const expected_row = (row) => row.map((w) => (w === null ? 'masked' : w.toFixed(2)));
