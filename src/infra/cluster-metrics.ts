import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * Under node:cluster a scrape reaches one worker, but must answer for all of them: the worker asks the
 * primary, which gathers every worker's registry with prom-client's AggregatorRegistry and merges them
 * (counters and histograms summed; each gauge as it declares).
 */
const REQUEST = 'account-service:metrics-request';
const RESPONSE = 'account-service:metrics-response';

/** A worker waits this long for the primary, which waits 5 s for the other workers. */
const WORKER_TIMEOUT_MS = 6000;

interface Response {
  type: typeof RESPONSE;
  id: number;
  text?: string;
  error?: string;
}

/** In the primary: answers workers' requests for the merged metrics. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: { type?: unknown; id?: unknown }) => {
    if (message?.type !== REQUEST) return;
    const reply = (answer: Omit<Response, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: RESPONSE, id: message.id, ...answer });
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
}

const pending = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
let nextId = 0;
let listening = false;

/**
 * In a worker: makes `registry` the one the primary gathers from this process, and returns how to ask
 * the primary for every worker's metrics, merged, in the Prometheus text format.
 */
export function clusterMetricsFor(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs this worker's answer to the primary's requests.
  new AggregatorRegistry();
  if (!listening) {
    listening = true;
    process.on('message', (message: Partial<Response>) => {
      if (message?.type !== RESPONSE || typeof message.id !== 'number') return;
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.error !== undefined) waiter.reject(new Error(`metrics of the other workers: ${message.error}`));
      else waiter.resolve(message.text ?? '');
    });
  }
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`the primary did not answer within ${WORKER_TIMEOUT_MS} ms`));
      }, WORKER_TIMEOUT_MS);
      pending.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      process.send!({ type: REQUEST, id });
    });
}
