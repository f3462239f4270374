// api.ts — the only file that talks to the server. One typed function per route of
// docs/api.md; every failure becomes an ApiError carrying the server's own message.
import type {
  HeadSplitResponse,
  HeadsResponse,
  ProgramsResponse,
  ProgressCheckRequest,
  ProgressResponse,
  WeightsRequest,
  WeightsResponse,
} from './types';

/** An error the learner can read: the API's `{"error": {code, message}}`, or a network failure. */
export class ApiError extends Error {
  constructor(
    readonly status: number, // HTTP status; 0 when the server could not be reached
    readonly code: string, // "invalid_argument", "too_long", ... or "network"
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'Could not reach the headlab server. Is `headlab serve` running?');
  }
  let data: unknown = null;
  try {
    data = await response.json();
  } catch {
    // fall through: a body that is not JSON is reported below
  }
  if (!response.ok) {
    const error = (data as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    const code = typeof error?.code === 'string' ? error.code : 'http_' + response.status;
    const message = typeof error?.message === 'string' ? error.message : `The server answered ${response.status} ${response.statusText}.`;
    throw new ApiError(response.status, code, message);
  }
  if (data === null) throw new ApiError(response.status, 'bad_response', 'The server sent an answer that is not JSON.');
  return data as T;
}

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

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
};
