// A watch recorder for tests: keeps every response and waits (bounded) for a condition on them.
import type {
  KeySpan,
  KVStore,
  Watch,
  WatchEvent,
  WatchOptions,
  WatchResponse,
} from '../../src/storage/contract.js';

export interface RecordedWatch {
  readonly responses: WatchResponse[];
  readonly watch: Watch;
  /** Every event so far, in delivery order. */
  events(): WatchEvent[];
  /** Resolves when `condition` holds on the responses; rejects after `timeoutMs`. */
  waitFor(
    condition: (responses: WatchResponse[]) => boolean,
    timeoutMs?: number,
    what?: string,
  ): Promise<void>;
  /** Waits until at least `count` events arrived. */
  waitForEvents(count: number, timeoutMs?: number): Promise<WatchEvent[]>;
  close(): void;
}

export function recordWatch(store: KVStore, span: KeySpan, options: WatchOptions = {}): RecordedWatch {
  const responses: WatchResponse[] = [];
  let wake: (() => void) | undefined;
  const watch = store.watch(span, options, (response) => {
    responses.push(response);
    wake?.();
  });
  const events = (): WatchEvent[] => responses.flatMap((r) => (r.type === 'events' ? r.events : []));
  const waitFor = async (
    condition: (responses: WatchResponse[]) => boolean,
    timeoutMs = 10_000,
    what = 'watch condition',
  ): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!condition(responses)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `timed out waiting for ${what}; responses so far: ${JSON.stringify(summary(responses))}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  };
  return {
    responses,
    watch,
    events,
    waitFor,
    async waitForEvents(count, timeoutMs) {
      await waitFor(
        (all) => all.some((r) => r.type === 'canceled') || events().length >= count,
        timeoutMs,
        `${count} events`,
      );
      const canceled = responses.find((r) => r.type === 'canceled');
      if (canceled !== undefined && events().length < count) {
        throw new Error(`watch canceled: ${JSON.stringify(summary([canceled]))}`);
      }
      return events();
    },
    close: () => watch.close(),
  };
}

function summary(responses: WatchResponse[]): unknown[] {
  return responses.map((r) => {
    switch (r.type) {
      case 'events':
        return r.events.map((e) => `${e.type} ${e.kv.key}@${e.kv.modRevision}`);
      case 'progress':
        return `progress ${r.revision}`;
      case 'canceled':
        return `canceled ${r.error.code}: ${r.error.message}`;
      default:
        return r;
    }
  });
}
