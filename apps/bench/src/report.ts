/**
 * The bench's output: a table of the performance goals (each with its figure, target, the baseline
 * measured in the same run, the ratio and whether it is met), then the details of each phase.
 * Goals not met do not fail the run; `problems` (wrong answers, bad signatures, missing webhooks)
 * do.
 */
export type GoalLine = {
  label: string;
  figure: string;
  target: string;
  baseline?: string;
  ratio?: string;
  /** null: not measured (then `figure` says why). */
  met: boolean | null;
};

export const ms = (value: number) => (!Number.isFinite(value) ? 'never' : value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`);
export const perSecond = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
export const times = (ratio: number) =>
  !Number.isFinite(ratio) ? '-' : ratio >= 10 ? `${ratio.toFixed(0)}×` : ratio >= 0.1 ? `${ratio.toFixed(2)}×` : `${ratio.toFixed(3)}×`;

export class Report {
  private readonly goals: GoalLine[] = [];
  private readonly sections: { title: string; lines: string[] }[] = [];
  readonly problems: string[] = [];
  readonly notes: string[] = [];

  goal(line: GoalLine): void {
    this.goals.push(line);
  }

  notMeasured(label: string, target: string, why: string): void {
    this.goals.push({ label, figure: `not measured: ${why}`, target, met: null });
  }

  section(title: string, lines: string[]): void {
    this.sections.push({ title, lines });
  }

  /** A failure of correctness: printed under FAILED, and the exit code is 1. */
  problem(text: string): void {
    this.problems.push(text);
  }

  render(header: string): string {
    const out = [header, '', 'goals (figure | target | baseline of this run | ratio | verdict)'];
    for (const g of this.goals) {
      const verdict = g.met === null ? 'NOT MEASURED' : g.met ? 'met' : 'NOT MET';
      if (g.met === null) {
        out.push(`  ${g.label.padEnd(44)} ${g.figure}  (target ${g.target})  ${verdict}`);
        continue;
      }
      out.push(
        `  ${g.label.padEnd(44)} ${g.figure.padEnd(19)} ${g.target.padEnd(13)} ${(g.baseline ?? '-').padEnd(31)} ${(g.ratio ?? '-').padEnd(9)} ${verdict}`,
      );
    }
    for (const s of this.sections) {
      out.push('', s.title);
      out.push(...s.lines.map((line) => `  ${line}`));
    }
    out.push(...this.notes.map((n) => `  note: ${n}`));
    return out.join('\n') + '\n';
  }
}

/** A label and its value, aligned, for the detail sections. */
export const row = (label: string, value: string) => `${label.padEnd(42)} ${value}`;
