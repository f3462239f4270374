// retry_waits.svelte.ts — the retried requests waiting right now (lib/retry.ts), for the page's
// one RetryNotice. Importing it connects lib/api.ts's retries to the page.
import { set_retry_report } from './api';
import type { RetryWait } from './retry';

class RetryWaits {
  list = $state.raw<RetryWait[]>([]); // raw: a wait is found again by identity when it ends

  /** Sends every waiting request now (also those that gave up: a new round of sends each). */
  try_now(): void {
    for (const w of [...this.list]) w.try_now();
  }

  /** Stops every wait: each request fails with its refusal, shown where its page shows errors. */
  cancel(): void {
    for (const w of [...this.list]) w.cancel();
  }
}

export const retry_waits = new RetryWaits();

set_retry_report((wait) => {
  retry_waits.list = [...retry_waits.list, wait];
  return () => (retry_waits.list = retry_waits.list.filter((w) => w !== wait));
});
