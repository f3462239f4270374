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
}

export interface ChallengeCell {
  challenge: string;
  done: boolean;
  done_at: string | null;
  tries: number; // checks until the first pass (all of them while not done)
}

export interface LearnerRow {
  nickname: string;
  joined_at: string;
  lessons: { lesson: string; challenges: ChallengeCell[] }[]; // course order
}

export interface ChallengeSummary {
  lesson: string;
  challenge: string;
  text: string;
  done_count: number;
  wrong_answers: { answer: string; count: number }[]; // commonest first, at most 3
}

/** GET /api/class/view */
export interface ClassView {
  class: ClassInfo;
  learner_count: number;
  learners: LearnerRow[];
  challenges: ChallengeSummary[];
  removed: { nickname: string; removed_at: string }[]; // kept out until POST /api/class/unban
}
