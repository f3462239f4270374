// lessons/index.ts — slug -> page. A lesson's page is a folder NN-slug/ holding one
// Lesson.svelte (NN its number, slug the id the server gives it); this file finds the
// folders itself, so adding a lesson adds no line here. Titles, order and "coming"
// lessons come from the server (GET /api/lessons, src/course/), never from here.
import type { Component } from 'svelte';

/** What every Lesson.svelte is given: its number and title as the course lists them. */
export interface LessonProps {
  number: number;
  title: string;
}

export interface LessonPage {
  slug: string; // in the URL: #/lessons/<slug>; the API's lesson id
  number: number; // from the folder name; the server's number is the one shown
  component: Component<LessonProps>;
}

const folders = import.meta.glob<{ default: Component<LessonProps> }>('./*/Lesson.svelte', { eager: true });

export const lesson_pages: LessonPage[] = Object.entries(folders)
  .map(([file, module]) => {
    const m = /^\.\/(\d+)-([a-z0-9-]+)\/Lesson\.svelte$/.exec(file);
    if (!m) throw new Error(`${file}: a lesson folder is named NN-slug, like 03-word-order`);
    return { slug: m[2], number: Number(m[1]), component: module.default };
  })
  .sort((a, b) => a.number - b.number);

/** The page of this lesson; the first lesson's for an unknown or empty slug. */
export function find_lesson_page(slug: string | null): LessonPage {
  return lesson_pages.find((l) => l.slug === slug) ?? lesson_pages[0];
}
