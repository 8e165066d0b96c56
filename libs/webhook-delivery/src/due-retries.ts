// setTimeout's longest delay; a retry due later is looked at then, and again until it is due.
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * The retries this process scheduled, by when they come due: one timer, for the earliest, hands
 * the endpoints whose retries are due by then to `due` (DeliveryLoop's kick), so a retry is sent
 * at its time without the store being asked over and over whether anything came due. What this
 * process did not schedule (another replica's, or a previous run's) the loop's discovery finds.
 */
export class DueRetries {
  /** A binary min-heap on `at`. */
  private readonly heap: Array<{ at: number; endpointId: string }> = [];
  private timer: NodeJS.Timeout | null = null;
  private armedFor = Infinity;

  constructor(
    private readonly due: (endpointIds: string[]) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A retry to `endpointId` comes due at `at` (ms since the epoch). */
  add(endpointId: string, at: number): void {
    const heap = this.heap;
    heap.push({ at, endpointId });
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= heap[i].at) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
    if (at < this.armedFor) this.arm();
  }

  /** Retries waiting to come due. */
  get size(): number {
    return this.heap.length;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.armedFor = Infinity;
    this.heap.length = 0;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.armedFor = this.heap.length > 0 ? this.heap[0].at : Infinity;
    if (this.armedFor === Infinity) return;
    this.timer = setTimeout(() => this.fire(), Math.min(LONGEST_TIMER_MS, Math.max(0, this.armedFor - this.now())));
    // Nothing to send is no reason to keep a process alive.
    this.timer.unref();
  }

  private fire(): void {
    const now = this.now();
    const endpoints = new Set<string>();
    while (this.heap.length > 0 && this.heap[0].at <= now) endpoints.add(this.pop());
    this.arm();
    if (endpoints.size > 0) this.due([...endpoints]);
  }

  private pop(): string {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < heap.length && heap[left].at < heap[smallest].at) smallest = left;
        if (right < heap.length && heap[right].at < heap[smallest].at) smallest = right;
        if (smallest === i) break;
        [heap[smallest], heap[i]] = [heap[i], heap[smallest]];
        i = smallest;
      }
    }
    return top.endpointId;
  }
}
