/**
 * What the run started, to be stopped in reverse order however the run ends: finished, failed or
 * interrupted. Each step is bounded, and a step that fails does not keep the others from running.
 */
export class Teardown {
  private readonly steps: Array<{ what: string; stop: () => Promise<void> | void }> = [];
  private running: Promise<void> | undefined;

  add(what: string, stop: () => Promise<void> | void): void {
    this.steps.push({ what, stop });
  }

  run(): Promise<void> {
    this.running ??= this.stopAll();
    return this.running;
  }

  private async stopAll(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
      });
      try {
        await Promise.race([Promise.resolve().then(step.stop), timeout]);
      } catch (error) {
        process.stderr.write(`bench: stopping ${step.what} failed: ${error instanceof Error ? error.message : String(error)}\n`);
      } finally {
        clearTimeout(timer);
      }
    }
  }
}

const STEP_TIMEOUT_MS = 8_000;
