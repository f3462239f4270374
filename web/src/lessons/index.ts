// lessons/index.ts — the course in teaching order. A lesson is a numbered folder with
// one Lesson.svelte; adding a lesson means adding a folder and a line here. Lessons the
// server announces as coming have no folder and no link.
import type { Component } from 'svelte';
import CausalMaskLesson from './01-causal-mask/Lesson.svelte';
import TrainedHeadsLesson from './02-trained-heads/Lesson.svelte';

export interface LessonEntry {
  slug: string; // in the URL: #/lessons/<slug>; the API's lesson id
  number: number;
  title: string;
  component: Component;
}

export const lessons: LessonEntry[] = [
  { slug: 'causal-mask', number: 1, title: 'Attention heads and the causal mask', component: CausalMaskLesson },
  { slug: 'trained-heads', number: 2, title: 'What trained heads learn', component: TrainedHeadsLesson },
];

export function find_lesson(slug: string | null): LessonEntry {
  return lessons.find((l) => l.slug === slug) ?? lessons[0];
}
