// class_types.ts — the class routes' bodies as docs/api.md shows them ("Classes").
export interface ClassInfo {
  code: string; // "K7QPM3"
  name: string;
  created_at: string; // ISO-8601 UTC
  version: number; // raised by every change to the class
  join_path: string; // "/#/join/K7QPM3"
}

/** POST /api/classes: the secret is there only when no passphrase was set, and only now. */
export interface CreatedClass {
  class: ClassInfo;
  secret?: string;
  expires_at: number;
}

/** GET /api/class/membership, POST /api/class/join and /leave. */
export interface Membership {
  class: { code: string; name: string } | null;
  nickname?: string;
  carried_over?: number; // join only: challenges finished before joining, now shown to the teacher
}

export interface ChallengeCell {
  challenge: string;
  done: boolean;
  done_at: string | null;
  tries: number; // checks until the first pass (all of them while not done)
  before_joining: boolean; // done before the learner joined: carried over, not done in class
  revealed_at: string | null; // the learner was shown the answer: not credited after it
}

export interface LearnerRow {
  nickname: string;
  joined_at: string;
  total: number; // challenges done
  last_active: string; // ISO-8601 UTC: the latest check, reveal or joining
  lessons: { lesson: string; challenges: ChallengeCell[] }[]; // course order
}

export interface ChallengeSummary {
  lesson: string;
  lesson_title: string;
  challenge: string;
  title: string; // a few words: the column head
  text: string; // the task as the learner reads it
  done_count: number;
  wrong_answers: { answer: string; count: number }[]; // readable ("an even spread"), commonest first, at most 3
}

/** GET /api/class/view */
export interface ClassView {
  class: ClassInfo;
  learner_count: number;
  learners: LearnerRow[];
  challenges: ChallengeSummary[];
  removed: { nickname: string; removed_at: string }[]; // kept out until POST /api/class/unban
}

/** What one check saw, as the server kept it (docs/api.md, GET /api/class/evidence). */
export interface CheckEvidence {
  text?: string; // the learner's text
  layer?: number;
  head?: number | string; // a head of the model (with layer), or lesson 1's head by name
  mask?: boolean;
  query?: number;
  choice?: string;
  positions?: number[];
  revealed?: boolean;
  why?: string; // the check's explanation, in numbers from the evidence
}

/** GET /api/class/evidence: one learner's checks of one challenge, up to the first pass. */
export interface ClassEvidence {
  nickname: string;
  lesson: string;
  challenge: string;
  title: string;
  text: string;
  revealed_at: string | null;
  attempts: { at: string; passed: boolean; before_joining: boolean; answer: string; evidence: CheckEvidence | null }[];
}
