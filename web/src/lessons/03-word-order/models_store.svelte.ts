// models_store.svelte.ts — the three lesson models (GET /api/positions/models), asked for once
// and shared by part 1's twist and part 4.
import { api } from '../../lib/api';
import { message } from './lesson_state.svelte';
import type { LessonModel } from '../../lib/positions_types';

class ModelsStore {
  models = $state<LessonModel[] | null>(null);
  error = $state<string | null>(null);
  private asked = false;
  load(): void {
    if (this.asked) return;
    this.asked = true;
    api.lessonModels()
      .then((m) => (this.models = m))
      .catch((e) => (this.error = 'The lesson models could not be listed: ' + message(e)));
  }
}
export const models_store = new ModelsStore();
