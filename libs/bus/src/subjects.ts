import { DURABLE_SUBJECT_ROOT } from './bus.port';

/**
 * NATS subject matching, for the in-process adapter and for checks both adapters share:
 * `*` matches exactly one token, `>` (last token only) one or more.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const patternTokens = pattern.split('.');
  const subjectTokens = subject.split('.');
  for (let i = 0; i < patternTokens.length; i++) {
    const token = patternTokens[i];
    if (token === '>') return subjectTokens.length > i;
    if (i >= subjectTokens.length) return false;
    if (token !== '*' && token !== subjectTokens[i]) return false;
  }
  return patternTokens.length === subjectTokens.length;
}

/** Publish subjects are concrete and under `evt.`: only those are stored (the JetStream stream binds `evt.>`). */
export function assertPublishSubject(subject: string): void {
  assertUnderDurableRoot(subject);
  if (subject.split('.').some((token) => token === '*' || token === '>')) {
    throw new Error(`cannot publish to a wildcard subject: ${subject}`);
  }
}

/** Consumer filters may use wildcards but must stay under `evt.`. */
export function assertConsumerSubject(subject: string): void {
  assertUnderDurableRoot(subject);
}

function assertUnderDurableRoot(subject: string): void {
  const tokens = subject.split('.');
  if (tokens.length < 2 || tokens[0] !== DURABLE_SUBJECT_ROOT || tokens.some((token) => token === '')) {
    throw new Error(`durable subjects live under ${DURABLE_SUBJECT_ROOT}.>, got: ${subject}`);
  }
}

/** Durable names become NATS consumer names: no dots, wildcards or whitespace. */
export function assertDurableName(durable: string): void {
  if (!/^[A-Za-z0-9_-]+$/.test(durable)) {
    throw new Error(`durable names may only use letters, digits, '_' and '-', got: ${durable}`);
  }
}
