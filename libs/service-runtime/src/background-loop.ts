import { Logger } from '@nestjs/common';

/**
 * Runs `work` whenever kicked, and every `intervalMs` anyway, in `concurrency` parallel lanes.
 * `work` returns true while it found something to do, so a lane drains a backlog before it
 * waits again. Used by workers that pick due items from the read store (webhook deliveries).
 */
export class BackgroundLoop {
  private readonly logger: Logger;
  private running = false;
  private lanes: Promise<void>[] = [];
  private wakeups: Array<() => void> = [];

  constructor(
    private readonly name: string,
    private readonly work: () => Promise<boolean>,
    private readonly options: { intervalMs: number; concurrency: number },
  ) {
    this.logger = new Logger(name);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.lanes = Array.from({ length: this.options.concurrency }, () => this.lane());
  }

  kick(): void {
    const wakeups = this.wakeups;
    this.wakeups = [];
    wakeups.forEach((wake) => wake());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.kick();
    await Promise.all(this.lanes);
  }

  private async lane(): Promise<void> {
    while (this.running) {
      let busy = false;
      try {
        busy = await this.work();
      } catch (error) {
        this.logger.error(`${this.name} failed: ${(error as Error).message}`);
      }
      if (!busy && this.running) await this.sleep();
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.options.intervalMs);
      const wake = () => done();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeups.push(wake);
    });
  }
}
