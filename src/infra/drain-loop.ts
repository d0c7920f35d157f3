/**
 * Runs `drain` every `intervalMs`, and at once on `wake()`, never twice at the same time: a wake
 * during a run asks for one more run after it. The mail outbox and the webhook dispatcher drain
 * their queues with it.
 */
export class DrainLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private halted = true;

  constructor(
    private readonly drain: () => Promise<void>,
    private readonly intervalMs: number,
    /** Told of a run that failed; the next one tries again. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** True before `start()` and once `stop()` is called: a run in hand should give back what it has not begun. */
  get stopped(): boolean {
    return this.halted;
  }

  start(): void {
    if (!this.halted) return;
    this.halted = false;
    const tick = () => {
      this.timer = setTimeout(() => {
        this.wake();
        tick();
      }, this.intervalMs);
      this.timer.unref();
    };
    // The first run waits for the first tick too: a start should not wait for the queue's first
    // query (an embedded database reads its catalog then); work queued meanwhile calls `wake()`.
    tick();
  }

  /** Drains now, without waiting for the next tick. */
  wake(): void {
    if (this.halted) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch(this.onError)
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Stops the ticks and waits for the run in hand. */
  async stop(): Promise<void> {
    this.halted = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
