// api.ts — the word-order routes, through the app's one request function (lib/api.ts).
import { request } from '../../lib/api';
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
} from './types';

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

export const word_order_api = {
  rope: (req: RopeRequest) => request<RopeResponse>('POST', '/api/rope', req),
  /** Both as typed, so the server can say what is wrong with them. */
  wavelengths: (theta: string, head_size: string) =>
    request<WavelengthsResponse>('GET', '/api/rope/wavelengths?' + query({ theta, head_size })),
  positions: () => request<PositionsResponse>('GET', '/api/positions'),
  contentOnly: (text: string, head: number, order?: number[]) =>
    request<ContentOnlyResponse>('POST', '/api/positions/content-only', order ? { text, head, order } : { text, head }),
  models: async () => (await request<{ models: LessonModel[] }>('GET', '/api/positions/models')).models,
  length: (model: string) => request<LengthResponse>('POST', '/api/positions/length', { model }),
  run: (model: string, text: string, layer: number, head: number) =>
    request<LessonRunResponse>('POST', '/api/positions/run', { model, text, layer, head }),
  check: (learner: string, challenge: WordOrderChallenge, answer: WordOrderAnswer) =>
    request<WordOrderCheckResponse>('POST', '/api/lessons/word-order/check', { learner, challenge, answer }),
};
