// api.ts — the only file that talks to the server. One typed function per route of
// docs/api.md; every failure becomes an ApiError carrying the server's own message. The model's
// routes and the progress writes are sent again by themselves when refused for now (429, 503:
// lib/retry.ts); the page shows the wait through the report set by set_retry_report.
import type {
  CourseResponse,
  FeedbackRequest,
  FeedbackResponse,
  HeadScore,
  HeadSplitResponse,
  InductionComparisonResponse,
  QueryScoresRequest,
  QueryScoresResponse,
  ModelInfo,
  ModelInterveneRequest,
  ModelInterveneResponse,
  ModelRunRequest,
  ModelRunHeads,
  ModelRunResponse,
  QueuePlace,
  ScanReport,
  ScannedHead,
  TrainedHeadsCheckRequest,
  TrainedHeadsCheckResponse,
  TrainingLog,
  HeadsResponse,
  ProgramsResponse,
  ProgressCheckRequest,
  ProgressResponse,
  WeightsRequest,
  WeightsResponse,
} from './types';
import type {
  ContentOnlyResponse,
  LengthResponse,
  LessonModel,
  LessonRunResponse,
  PositionsResponse,
  RopeRequest,
  RopeResponse,
  WavelengthsResponse,
  WordOrderAnswer,
  WordOrderChallenge,
  WordOrderCheckResponse,
} from './positions_types';
import type { ClassEvidence, ClassView, CreatedClass, ClassInfo, Membership } from '../teacher/class_types';

import { expand_compact_run } from './compact_views';
import { parse_retry_after, with_retry, type RetryReport } from './retry';

/** An error the learner can read: the API's `{"error": {code, message}}`, or a network failure. */

export class ApiError extends Error {
  constructor(
    readonly status: number, // HTTP status; 0 when the server could not be reached
    readonly code: string, // "invalid_argument", "too_long", ... or "network"
    message: string,
    // the envelope's other fields, as the server sent them (a patching sweep's 413: "cost",
    // "limit", "narrowings"; docs/api.md); {} when it sent none
    readonly details: Record<string, unknown> = {},
    readonly retry_after_s: number | null = null, // the Retry-After header of a 429 or 503, in seconds
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The API's advice for a text that is too long names a request field (`send "truncate": true`);
 *  a learner has a text box, not a request, so the advice is said in the page's terms. */
export function learner_words(message: string): string {
  return message
    .replace(/;\s*send "truncate": true to keep the last (\d+), or shorten it\.?$/, ': shorten it to at most $1 tokens, the start token included.')
    .replace(/\(with BOS\)/g, '(with the start token)')
    .replace(/^the text is/, 'The text is');
}

/** What to tell the learner about a failed call: the server's own words in the page's terms,
 *  or what went wrong. */
export const error_message = (e: unknown) => (e instanceof ApiError ? learner_words(e.message) : 'Something went wrong: ' + String(e));

// The one place that calls fetch. A server that cannot be reached is an ApiError too.
async function send(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch {
    if (init.signal?.aborted) throw superseded();
    throw new ApiError(0, 'network', 'Could not reach the headlab server. Is `headlab serve` running?');
  }
}

/** What a request fails with when the page sent a newer one in its place (its signal aborted). */
export const superseded = () => new ApiError(0, 'superseded', 'A newer request took the place of this one.');

// Where the waits of retried requests are shown (lib/retry_waits.svelte.ts sets it); none: not shown.
let retry_report: RetryReport | undefined;
export function set_retry_report(report: RetryReport | undefined): void {
  retry_report = report;
}

// The answer's JSON, or the ApiError its error envelope (or its status) describes.
async function answer_of<T>(response: Response): Promise<T> {
  let data: unknown = null;
  try {
    data = await response.json();
  } catch {
    // fall through: a body that is not JSON is reported below
  }
  if (!response.ok) {
    const error = (data as { error?: { code?: unknown; message?: unknown; [field: string]: unknown } } | null)?.error;
    const code = typeof error?.code === 'string' ? error.code : 'http_' + response.status;
    const message = typeof error?.message === 'string' ? error.message : `The server answered ${response.status} ${response.statusText}.`;
    const details = Object.fromEntries(Object.entries(error && typeof error === 'object' ? error : {}).filter(([k]) => k !== 'code' && k !== 'message'));
    throw new ApiError(response.status, code, message, details, parse_retry_after(response.headers.get('Retry-After')));
  }
  if (data === null) throw new ApiError(response.status, 'bad_response', 'The server sent an answer that is not JSON.');
  return data as T;
}

// The learner id of a class member, sent with the model's requests as X-Headlab-Learner: the
// server then gives each learner of a class their own model turns and budget, even when the
// whole class reaches it through one school address (an id that never joined shares its
// address's). Remembered from the class routes' answers, and across reloads.
const CLASS_LEARNER_KEY = 'headlab.class-learner';
let class_learner: string | null = null;
try {
  class_learner = localStorage.getItem(CLASS_LEARNER_KEY);
} catch {
  // storage blocked: known once the join page asks
}
function note_membership(learner: string, m: Membership): Membership {
  class_learner = m.class ? learner : null;
  try {
    if (class_learner) localStorage.setItem(CLASS_LEARNER_KEY, class_learner);
    else localStorage.removeItem(CLASS_LEARNER_KEY);
  } catch {
    // storage blocked: kept for the visit
  }
  return m;
}

/** The calls sent again by themselves when refused for now (lib/retry.ts): the model's routes
 *  (its queue was full, a deadline passed, the client's model time ran out) and the progress
 *  writes and answer checks (their rate limit), which are harmless to send twice (a check
 *  carries its request_id, docs/api.md). Not the class routes: a join's wait is minutes. */
export function is_retried(method: 'GET' | 'POST', path: string): boolean {
  const route = path.split('?')[0];
  if (method === 'GET') return route === '/api/model/scan' || route === '/api/model/compose';
  return (
    route.startsWith('/api/model/') ||
    route.startsWith('/api/positions/') ||
    route === '/api/weights' ||
    route === '/api/progress/check' ||
    route === '/api/progress/reset' ||
    /^\/api\/lessons\/[a-z0-9-]+\/(check|induction)$/.test(route)
  );
}

/** How one call is sent: `signal` aborted, a newer call took its place (a retry's pending wait
 *  ends and the call fails with superseded()); `sending(true)` as each send goes out and
 *  `sending(false)` as its answer comes (a retry's waits lie between). */
export interface CallOptions {
  signal?: AbortSignal;
  sending?: (out: boolean) => void;
}

/** One call to the API; sent again when refused for now if is_retried says so. */
export async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown, { signal, sending }: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (class_learner && (path.startsWith('/api/model/') || path.startsWith('/api/lessons/'))) headers['X-Headlab-Learner'] = class_learner;
  const once = async () => {
    sending?.(true);
    try {
      const response = await send(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
      return await answer_of<T>(response);
    } finally {
      sending?.(false);
    }
  };
  if (!is_retried(method, path)) return once();
  if (signal?.aborted) throw superseded();
  try {
    return await with_retry(once, { signal, report: retry_report });
  } catch (e) {
    throw signal?.aborted ? superseded() : e;
  }
}

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

/** A fresh id for one answer check: sent with it (and with any retry of it), so the server
 *  stores the check once however often it arrives. getRandomValues, not randomUUID: a class
 *  server reached over plain http on the school network is not a secure context. */
export function new_request_id(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** POST /api/model/run. With `encoding: 'base64'` the views travel compact and come back here as
 *  rows (compact_views.ts); with `predictions: false` the answer has the heads alone, and its type says so. */
function run_model(req: ModelRunRequest & { predictions: false }, signal?: AbortSignal): Promise<ModelRunHeads>;
function run_model(req: ModelRunRequest, signal?: AbortSignal): Promise<ModelRunResponse>;
async function run_model(req: ModelRunRequest, signal?: AbortSignal): Promise<ModelRunHeads> {
  return expand_compact_run(await request<ModelRunHeads>('POST', '/api/model/run', req, { signal }));
}

/** A run that reports its place while it waits: on_ahead(n) with the runs ahead of it in the
 *  model's queue (GET /api/model/queue, polled every 0.7 s from 0.4 s on while a send is out:
 *  not during a retry's wait), on_ahead(null) once it runs or is answered. */
function run_model_waiting(req: ModelRunRequest & { predictions: false }, on_ahead: (ahead: number | null) => void, signal?: AbortSignal): Promise<ModelRunHeads>;
function run_model_waiting(req: ModelRunRequest, on_ahead: (ahead: number | null) => void, signal?: AbortSignal): Promise<ModelRunResponse>;
async function run_model_waiting(req: ModelRunRequest, on_ahead: (ahead: number | null) => void, signal?: AbortSignal): Promise<ModelRunHeads> {
  const id = new_request_id();
  let done = false;
  let out = false; // a send is out (not waiting to be sent again)
  const poll = async () => {
    while (!done) {
      try {
        if (!out) on_ahead(null);
        else {
          const place = await request<QueuePlace>('GET', '/api/model/queue?' + query({ request_id: id }));
          if (!done && out) on_ahead(place.state === 'waiting' ? place.ahead : null);
        }
      } catch {
        // a lost poll only leaves the last place shown
      }
      await new Promise((resolve) => setTimeout(resolve, 700));
    }
  };
  const started = setTimeout(() => void poll(), 400);
  try {
    return expand_compact_run(await request<ModelRunHeads>('POST', '/api/model/run?' + query({ request_id: id }), req, { signal, sending: (o) => (out = o) }));
  } finally {
    done = true;
    clearTimeout(started);
    on_ahead(null);
  }
}

export const api = {
  heads: () => request<HeadsResponse>('GET', '/api/heads'),

  weights: (req: WeightsRequest) => request<WeightsResponse>('POST', '/api/weights', req),

  /** d_model and h are passed as typed, so the server can explain what is wrong with them. */
  headSplit: (d_model: string, h: string) =>
    request<HeadSplitResponse>('GET', '/api/head-split?' + query({ d_model, h })),

  headSplitPresets: () => request<HeadSplitResponse>('GET', '/api/head-split'),

  progress: (learner: string, lesson: string) =>
    request<ProgressResponse>('GET', '/api/progress?' + query({ learner, lesson })),

  checkProgress: (req: ProgressCheckRequest) => request<ProgressResponse>('POST', '/api/progress/check', req),

  resetProgress: (learner: string, lesson: string) =>
    request<ProgressResponse>('POST', '/api/progress/reset', { learner, lesson }),

  programs: (lesson: string) => request<ProgramsResponse>('GET', `/api/lessons/${encodeURIComponent(lesson)}/programs`),

  // ---- the model ----
  model: () => request<ModelInfo>('GET', '/api/model'),

  queryScores: (req: QueryScoresRequest) => request<QueryScoresResponse>('POST', '/api/model/query-scores', req),
  inductionComparison: (sentence: string) =>
    request<InductionComparisonResponse>('POST', '/api/lessons/causal-mask/induction', { sentence }),
  runModel: run_model,

  runModelWaiting: run_model_waiting, // reports its place in the model's queue while it waits

  intervene: (req: ModelInterveneRequest) => request<ModelInterveneResponse>('POST', '/api/model/intervene', req),

  scan: async () => scan_from_wire(await request<WireScan>('GET', '/api/model/scan')),

  trainingLog: () => request<TrainingLog>('GET', '/api/model/training-log'),

  // ---- the course ----
  lessons: (learner: string) => request<CourseResponse>('GET', '/api/lessons?' + query({ learner })),

  checkTrainedHeads: (req: TrainedHeadsCheckRequest) =>
    request<TrainedHeadsCheckResponse>('POST', '/api/lessons/trained-heads/check', { ...req, request_id: new_request_id() }),

  checkWordOrder: (learner: string, challenge: WordOrderChallenge, answer: WordOrderAnswer) =>
    request<WordOrderCheckResponse>('POST', '/api/lessons/word-order/check', {
      learner,
      challenge,
      answer,
      request_id: new_request_id(),
    }),

  feedback: (req: FeedbackRequest) => request<FeedbackResponse>('POST', '/api/feedback', req),

  // ---- word order: RoPE, position vectors, the three lesson models (lesson 3) ----
  rope: (req: RopeRequest) => request<RopeResponse>('POST', '/api/rope', req),

  /** Both as typed, so the server can say what is wrong with them. */
  ropeWavelengths: (theta: string, head_size: string) =>
    request<WavelengthsResponse>('GET', '/api/rope/wavelengths?' + query({ theta, head_size })),

  positions: () => request<PositionsResponse>('GET', '/api/positions'),

  contentOnly: (text: string, head: number, order?: number[]) =>
    request<ContentOnlyResponse>('POST', '/api/positions/content-only', order ? { text, head, order } : { text, head }),

  lessonModels: async () => (await request<{ models: LessonModel[] }>('GET', '/api/positions/models')).models,

  positionsLength: (model: string) => request<LengthResponse>('POST', '/api/positions/length', { model }),

  positionsRun: (model: string, text: string, layer: number, head: number) =>
    request<LessonRunResponse>('POST', '/api/positions/run', { model, text, layer, head }),

  // ---- classes (the teacher's session travels in an HttpOnly cookie the page never reads) ----
  createClass: (name: string, passphrase?: string) =>
    request<CreatedClass>('POST', '/api/classes', passphrase ? { name, passphrase } : { name }),

  joinClass: async (code: string, learner: string, nickname: string) =>
    note_membership(learner, await request<Membership>('POST', '/api/class/join', { code, learner, nickname })),

  membership: async (learner: string) =>
    note_membership(learner, await request<Membership>('GET', '/api/class/membership?' + query({ learner }))),

  leaveClass: async (learner: string) =>
    note_membership(learner, await request<Membership>('POST', '/api/class/leave', { learner })),

  teacherLogin: (code: string, secret: string) => request<{ class: ClassInfo }>('POST', '/api/class/login', { code, secret }),

  teacherLogout: () => request<{ logged_out: boolean }>('POST', '/api/class/logout', {}),

  /** The teacher's view; null when it has not changed since `etag` (the server answered 304). */
  classView: (code: string, etag: string | null) => class_view(code, etag),

  /** What a learner's checks of one challenge saw (the cell the teacher clicked). */
  classEvidence: (code: string, nickname: string, lesson: string, challenge: string) =>
    request<ClassEvidence>('GET', '/api/class/evidence?' + query({ code, nickname, lesson, challenge })),

  removeLearner: (code: string, nickname: string) => request<ClassView>('POST', '/api/class/remove-learner', { code, nickname }),
  unbanLearner: (code: string, nickname: string) => request<ClassView>('POST', '/api/class/unban', { code, nickname }),

  deleteClass: (code: string) => request<{ deleted: boolean }>('POST', '/api/class/delete', { code }),

  /** A link, not a fetch: the browser downloads the file with the session cookie. */
  classExportHref: (code: string) => '/api/class/export?' + query({ code }),

  // ---- the research toolbox (docs/research.md): patching, the logit lens, composition ----
  patch: (req: import('./research_types').PatchRequest) =>
    request<import('./research_types').PatchResponse>('POST', '/api/model/patch', req),

  lens: (req: import('./research_types').LensRequest) =>
    request<import('./research_types').LensResponse>('POST', '/api/model/lens', req),

  compose: (req: import('./research_types').ComposeRequest) =>
    request<import('./research_types').ComposeResponse>('POST', '/api/model/compose', req),
};

// Short polling through the browser's cache: the server says "private, no-cache", so the
// browser asks again each time with If-None-Match itself and answers a 304 with the view it
// kept. The same ETag as last time means nothing new. (A page's own If-None-Match on a
// no-store request makes Chromium log every 304 as a cancelled request.)
async function class_view(code: string, etag: string | null): Promise<{ view: ClassView; etag: string | null } | null> {
  const response = await send('/api/class/view?' + query({ code }), { headers: { Accept: 'application/json' }, cache: 'no-cache' });
  const tag = response.headers.get('ETag');
  if (response.ok && etag !== null && tag === etag) return null;
  return { view: await answer_of<ClassView>(response), etag: tag };
}

// GET /api/model/scan as the server's codec writes it (docs/api.md): scores and chance
// levels as two maps, null where a head has no such score; labels as {label, score,
// threshold, margin}. The pages take each score beside its chance, so they are paired here.
type WireScan = {
  model: string;
  heads: {
    layer: number;
    head: number;
    name: string;
    scores: Record<string, number | null>;
    chance: Record<string, number | null>;
    labels: { label: string; score: number; threshold: number; margin: number }[];
  }[];
  in_context_learning?: ScanReport['icl'];
  probes?: ScanReport['probes'];
};

function scan_from_wire(raw: WireScan): ScanReport {
  if (!raw || !Array.isArray(raw.heads)) throw new ApiError(200, 'bad_response', 'The head scanner sent a report without heads.');
  const heads: ScannedHead[] = raw.heads.map((h) => {
    const scores: Record<string, HeadScore> = {};
    for (const [name, score] of Object.entries(h.scores)) scores[name] = { score, chance: h.chance[name] ?? null };
    const labels = h.labels.map((l) => ({ name: l.label, score: l.score, threshold: l.threshold, margin: l.margin }));
    return { layer: h.layer, head: h.head, name: h.name, scores, labels };
  });
  return { model: raw.model, heads, icl: raw.in_context_learning ?? null, probes: raw.probes };
}
