/**
 * Work started once the answer has gone, on a later turn of the event loop, so that the answer's
 * time says nothing about what the work finds; a stop can wait for what is still running.
 */
export class AfterAnswer {
  private readonly pending = new Set<Promise<void>>();

  /** Starts `work` after the current turn; a failure goes to `onError`, never to the caller. */
  run(work: () => Promise<void>, onError: (error: unknown) => void): void {
    const started = new Promise<void>((resolve) => setImmediate(resolve)).then(work).catch(onError);
    this.pending.add(started);
    void started.finally(() => this.pending.delete(started));
  }

  /** Resolves once the work started so far, and any it started in turn, has finished. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }
}
