// retry.ts — a model request the server refuses for now (429 rate_limited, 503 unavailable) is
// sent again by itself after a wait: never before the server's Retry-After, plus a random part
// so a class of forty refused together does not come back on the same second; without a
// Retry-After, a short exponential backoff with jitter. A cap on sends and on the time waited,
// after which the learner decides (retry or cancel). Nothing else is retried (400, 413, ...).
//
//   const answer = await with_retry(() => send_once(), { signal, report });
//   // report({ status, message, attempt, until, try_now, cancel }) as each wait begins; the
//   // function it returns is called as that wait ends
//
// Plain TypeScript (no Svelte, no fetch): lib/api.ts sends, lib/retry_waits.svelte.ts shows.

/** What a refusal says about waiting: the fields of lib/api.ts's ApiError read here. */
export interface Refusal {
  status: number; // 429 or 503 are retried
  message: string; // the server's own words
  retry_after_s: number | null; // the Retry-After header, in seconds; null without one
  details: Record<string, unknown>; // the envelope's other fields ("model_loaded": false: no retry)
}

export interface RetryPolicy {
  max_attempts: number; // sends in all, the first one included
  max_total_wait_ms: number; // the waits between them, added up
  backoff_ms: number; // the first wait when the server names none (doubled each time)
  backoff_cap_ms: number; // the longest such wait
  jitter: number; // a Retry-After wait gets up to this fraction of itself more, at random…
  min_jitter_ms: number; // …and at least this much spread, so a class's returns spread out
}

export const CLASS_POLICY: RetryPolicy = {
  max_attempts: 6,
  max_total_wait_ms: 120_000,
  backoff_ms: 1_000,
  backoff_cap_ms: 16_000,
  jitter: 0.3,
  min_jitter_ms: 1_000,
};

/** The refusal a failed send describes, when it is one worth waiting out; null otherwise
 *  (another status, a network failure, or a server with no model: waiting will not load one). */
export function refusal_of(e: unknown): Refusal | null {
  if (typeof e !== 'object' || e === null) return null;
  const r = e as Partial<Refusal>;
  if (r.status !== 429 && r.status !== 503) return null;
  const details = r.details && typeof r.details === 'object' ? r.details : {};
  if (details.model_loaded === false) return null;
  return { status: r.status, message: String(r.message ?? ''), retry_after_s: r.retry_after_s ?? null, details };
}

/** Retry-After as seconds: delta-seconds ("12") or an HTTP date; null when absent or unreadable. */
export function parse_retry_after(header: string | null, now_ms: number = Date.now()): number | null {
  if (header === null) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = /^[A-Za-z]{3}, /.test(text) ? Date.parse(text) : NaN; // "Mon, 07 Dec 2026 04:00:30 GMT"
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now_ms) / 1000));
}

/**
 * How long to wait before send number `attempt + 1`, after `attempt` sends were refused and
 * `waited_ms` already spent waiting; null when the cap is reached (the learner decides).
 *   with Retry-After R s:  R·1000 + random · max(min_jitter_ms, jitter · R·1000)   (never before R)
 *   without:               b/2 + random · b,  b = min(backoff_cap_ms, backoff_ms · 2^(attempt-1))
 * random() is in [0, 1) (Math.random); a test passes its own.
 */
export function retry_wait_ms(refusal: Refusal, attempt: number, waited_ms: number, random: () => number, policy: RetryPolicy = CLASS_POLICY): number | null {
  if (attempt >= policy.max_attempts) return null;
  let wait: number;
  if (refusal.retry_after_s !== null) {
    const floor = refusal.retry_after_s * 1000;
    wait = floor + random() * Math.max(policy.min_jitter_ms, policy.jitter * floor);
  } else {
    const b = Math.min(policy.backoff_cap_ms, policy.backoff_ms * 2 ** (attempt - 1));
    wait = b / 2 + random() * b;
  }
  wait = Math.round(wait);
  return waited_ms + wait > policy.max_total_wait_ms ? null : wait;
}

/** One wait as the page shows it. */
export interface RetryWait {
  status: number; // the refusal's: 429 or 503
  message: string; // the server's words
  attempt: number; // sends refused so far
  until: number | null; // Date.now() at which it sends again; null: it gave up, the learner decides
  try_now: () => void; // send again now (also after giving up: a new round of sends)
  cancel: () => void; // stop: the request fails with the refusal, shown as any error is
}

/** Shows a wait as it begins (or the request gave up); returns what hides it again (the wait
 *  ended: sending again, cancelled or superseded). */
export type RetryReport = (wait: RetryWait) => () => void;

export interface RetryOptions {
  signal?: AbortSignal; // aborted: a newer request took its place; a pending wait ends at once
  policy?: RetryPolicy;
  random?: () => number;
  report?: RetryReport;
}

/** Sends, and sends again after each refusal worth waiting out (refusal_of) until answered, the
 *  cap (then the learner's choice through the report; without one, it fails there), a cancel,
 *  or the signal. Fails with the last refusal (the signal's reason when aborted). */
export async function with_retry<T>(send: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const { signal, policy = CLASS_POLICY, random = Math.random, report } = options;
  let attempt = 0;
  let waited = 0;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    let error: unknown;
    try {
      return await send();
    } catch (e) {
      error = e;
    }
    const refusal = refusal_of(error);
    if (!refusal || signal?.aborted) throw error;
    attempt += 1;
    const wait = retry_wait_ms(refusal, attempt, waited, random, policy);
    if (wait === null && !report) throw error; // nobody to decide: fail at the cap
    let hide: (() => void) | undefined;
    const choice = await pause(wait, signal, (controls) => (hide = report?.({ status: refusal.status, message: refusal.message, attempt, until: wait === null ? null : Date.now() + wait, ...controls })));
    hide?.();
    if (choice === 'cancel') throw error;
    if (choice === 'abort') throw signal?.reason ?? error;
    if (wait === null) {
      // the learner asked for a new round after the cap
      attempt = 0;
      waited = 0;
    } else waited += wait;
  }
}

// Waits `ms` (null: until the learner chooses), or until try_now, cancel or the signal.
function pause(ms: number | null, signal: AbortSignal | undefined, show: (controls: Pick<RetryWait, 'try_now' | 'cancel'>) => void): Promise<'send' | 'cancel' | 'abort'> {
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const end = (choice: 'send' | 'cancel' | 'abort') => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', on_abort);
      resolve(choice);
    };
    const on_abort = () => end('abort');
    signal?.addEventListener('abort', on_abort);
    if (ms !== null) timer = setTimeout(() => end('send'), ms);
    show({ try_now: () => end('send'), cancel: () => end('cancel') });
  });
}
