/**
 * Which of an account's two worlds something belongs to: `live` (real ad networks, real credits)
 * or `test` (the sandbox). The API key a request carries decides it, and every resource, event,
 * list and read is scoped to it. Declared here once; every lib takes it from here.
 */
export type Mode = 'live' | 'test';

export const MODES: readonly Mode[] = ['live', 'test'];
