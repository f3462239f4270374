// learner.ts — the anonymous learner id that keys challenge progress on the server.
// Kept in localStorage; 36 characters of hex and dashes, inside the API's 8–64 [A-Za-z0-9_-].
const KEY = 'headlab.learner';
const VALID = /^[A-Za-z0-9_-]{8,64}$/;

function fresh_id(): string {
  if (typeof crypto !== 'undefined' && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  // crypto.randomUUID needs a secure context; a page on a LAN address over http has only getRandomValues.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

let memory_id: string | null = null; // when storage is blocked, progress lasts for the visit

export function learner_id(): string {
  try {
    const stored = localStorage.getItem(KEY);
    if (stored && VALID.test(stored)) return stored;
    const id = fresh_id();
    localStorage.setItem(KEY, id);
    return id;
  } catch {
    memory_id ??= fresh_id();
    return memory_id;
  }
}
