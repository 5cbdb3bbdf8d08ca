// The chaos workload: clients that create, update with compare-and-swap, delete, get and list ConfigMaps through
// the HTTPS API of random nodes, and record every operation (call and reply times, outcome) for the checkers.
//
// Outcomes: `ok` (the reply says what happened), `fail` (a reply that proves nothing happened: 4xx other than
// 404/409, or any error on a read), `unknown` (no reply, or a 5xx on a write: the write may still commit).

import type { Random } from '../src/util/clock.js';
import { seededRandom } from '../src/util/clock.js';
import type { ObjectInput, ObjectOperation, ObjectOutput } from './checker/object-model.js';
import type { ApiClient, Reply } from './http.js';

export const keyPrefix = 'chaos-';
export const configMapsPath = '/api/v1/namespaces/default/configmaps';

export type ListMode = 'quorum' | 'any' | 'not-older-than' | 'exact';

export interface ListItem {
  readonly key: string;
  readonly value: string | undefined;
  readonly revision: number;
}

/** A list and what it returned (only successful lists are kept). */
export interface ListRecord {
  readonly clientId: number;
  readonly node: number;
  readonly mode: ListMode;
  /** The resourceVersion asked for (not-older-than, exact). */
  readonly requested: number | undefined;
  readonly callAt: number;
  readonly returnAt: number;
  readonly revision: number;
  readonly items: readonly ListItem[];
}

export type Outcome = 'ok' | 'fail' | 'unknown';

/** One line of the recorded history (history.jsonl). */
export interface HistoryRecord {
  readonly clientId: number;
  readonly node: number;
  readonly op: ObjectInput['type'] | 'list';
  readonly input: unknown;
  readonly callAt: number;
  readonly returnAt: number | null;
  readonly outcome: Outcome;
  readonly status: number;
  readonly output?: unknown;
}

export interface OpCounts {
  ok: number;
  fail: number;
  unknown: number;
}

export interface WorkloadResult {
  /** Operations on objects for the linearizability checker (definite failures left out: they had no effect). */
  readonly operations: ObjectOperation[];
  readonly lists: ListRecord[];
  readonly records: HistoryRecord[];
  readonly counts: Record<string, OpCounts>;
  /** Acknowledged time series: [seconds since start, ok operations in that second]. */
  readonly okPerSecond: number[];
}

export interface WorkloadOptions {
  readonly clients: number;
  readonly keys: number;
  readonly nodes: number;
  readonly seed: number;
  /** Each client stops after this many operations. */
  readonly opsPerClientMax: number;
  readonly apiUrl: (node: number) => string;
  readonly client: () => ApiClient;
  readonly now: () => number;
}

const configMap = (name: string, value: string, resourceVersion?: string): unknown => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default', ...(resourceVersion === undefined ? {} : { resourceVersion }) },
  data: { value },
});

interface ObjectBody {
  metadata?: { name?: string; resourceVersion?: string };
  data?: { value?: string };
}

function itemOf(object: unknown): ListItem | undefined {
  const o = object as ObjectBody | undefined;
  const name = o?.metadata?.name;
  const rv = Number(o?.metadata?.resourceVersion);
  if (name === undefined || !Number.isInteger(rv)) return undefined;
  return { key: name, value: o?.data?.value, revision: rv };
}

function statusReason(reply: Reply): string | undefined {
  return (reply.body as { reason?: string } | undefined)?.reason;
}

/** The workload; `run()` resolves when every client stopped (at `stop()` or its operation limit). */
export class Workload {
  private stopped = false;
  private readonly startedAt: number;
  private readonly result: WorkloadResult = {
    operations: [],
    lists: [],
    records: [],
    counts: {},
    okPerSecond: [],
  };
  /** The highest revision any reply showed (for not-older-than and exact lists). */
  private maxRevision = 1;

  constructor(private readonly options: WorkloadOptions) {
    this.startedAt = options.now();
  }

  stop(): void {
    this.stopped = true;
  }

  /** Outcomes so far, per operation type. */
  counts(): Record<string, OpCounts> {
    return this.result.counts;
  }

  async run(): Promise<WorkloadResult> {
    const seeds = seededRandom(this.options.seed);
    await Promise.all(
      Array.from({ length: this.options.clients }, (_, id) =>
        this.client(id, seededRandom(seeds.int(0, 2 ** 31))),
      ),
    );
    return this.result;
  }

  private count(op: string, outcome: Outcome): void {
    const counts = (this.result.counts[op] ??= { ok: 0, fail: 0, unknown: 0 });
    counts[outcome]++;
    if (outcome === 'ok') {
      const second = Math.floor((this.options.now() - this.startedAt) / 1000);
      while (this.result.okPerSecond.length <= second) this.result.okPerSecond.push(0);
      this.result.okPerSecond[second] = (this.result.okPerSecond[second] ?? 0) + 1;
    }
  }

  private async client(clientId: number, random: Random): Promise<void> {
    const http = this.options.client();
    /** The last resourceVersion this client saw per key (for compare-and-swap). */
    const known = new Map<string, string>();
    let sequence = 0;
    try {
      for (let i = 0; i < this.options.opsPerClientMax && !this.stopped; i++) {
        const key = `${keyPrefix}${random.int(0, this.options.keys)}`;
        const node = random.int(0, this.options.nodes);
        const roll = random.next();
        const value = `c${clientId}-${sequence++}`;
        const expected = known.get(key);
        if (roll < 0.15) {
          await this.write(http, clientId, node, { type: 'create', key, value }, known);
        } else if (roll < 0.45 && expected !== undefined) {
          await this.write(
            http,
            clientId,
            node,
            { type: 'update', key, value, expectedRevision: expected },
            known,
          );
        } else if (roll < 0.55) {
          const input: ObjectInput =
            expected !== undefined && random.next() < 0.7
              ? { type: 'delete', key, expectedRevision: expected }
              : { type: 'delete', key };
          await this.write(http, clientId, node, input, known);
        } else if (roll < 0.88) {
          await this.get(http, clientId, node, key, known);
        } else {
          const modes: ListMode[] = ['quorum', 'any', 'not-older-than', 'exact'];
          await this.list(http, clientId, node, modes[random.int(0, modes.length)] ?? 'quorum', known);
        }
      }
    } finally {
      http.close();
    }
  }

  private record(
    clientId: number,
    node: number,
    input: ObjectInput,
    callAt: number,
    reply: Reply,
    outcome: Outcome,
    output: ObjectOutput | undefined,
  ): void {
    const returnAt = outcome === 'unknown' ? null : this.options.now();
    this.count(input.type, outcome);
    this.result.records.push({
      clientId,
      node,
      op: input.type,
      input,
      callAt,
      returnAt,
      outcome,
      status: reply.status,
      ...(output === undefined ? {} : { output }),
    });
    if (outcome === 'fail') return;
    this.result.operations.push({
      clientId,
      input,
      output,
      callAt,
      returnAt: returnAt ?? Infinity,
    });
  }

  private async write(
    http: ApiClient,
    clientId: number,
    node: number,
    input: ObjectInput,
    known: Map<string, string>,
  ): Promise<void> {
    const base = `${this.options.apiUrl(node)}${configMapsPath}`;
    const callAt = this.options.now();
    let reply: Reply;
    switch (input.type) {
      case 'create':
        reply = await http.send(base, 'POST', configMap(input.key, input.value));
        break;
      case 'update':
        reply = await http.send(
          `${base}/${input.key}`,
          'PUT',
          configMap(input.key, input.value, input.expectedRevision),
        );
        break;
      case 'delete':
        reply = await http.send(`${base}/${input.key}`, 'DELETE', {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          ...(input.expectedRevision === undefined
            ? {}
            : { preconditions: { resourceVersion: input.expectedRevision } }),
        });
        break;
      case 'get':
        throw new Error('get is not a write');
    }
    const { outcome, output } = this.writeOutcome(input, reply);
    if (output?.type === 'ok' && output.revision !== undefined) {
      known.set(input.key, output.revision);
      this.seen(Number(output.revision));
    } else if (output?.type === 'ok' || output?.type === 'not-found') {
      known.delete(input.key);
    }
    this.record(clientId, node, input, callAt, reply, outcome, output);
  }

  private writeOutcome(
    input: ObjectInput,
    reply: Reply,
  ): { outcome: Outcome; output: ObjectOutput | undefined } {
    const status = reply.status;
    if (reply.refused === true) return { outcome: 'fail', output: undefined };
    if (status === 0 || status >= 500) return { outcome: 'unknown', output: undefined };
    if (status === 200 || status === 201) {
      if (input.type === 'delete') return { outcome: 'ok', output: { type: 'ok' } };
      const item = itemOf(reply.body);
      if (item === undefined) return { outcome: 'unknown', output: undefined };
      return { outcome: 'ok', output: { type: 'ok', revision: String(item.revision) } };
    }
    if (status === 404) return { outcome: 'ok', output: { type: 'not-found' } };
    if (status === 409) {
      if (input.type === 'create') return { outcome: 'ok', output: { type: 'exists' } };
      return statusReason(reply) === 'AlreadyExists'
        ? { outcome: 'fail', output: undefined }
        : { outcome: 'ok', output: { type: 'conflict' } };
    }
    return { outcome: 'fail', output: undefined };
  }

  private seen(revision: number): void {
    if (Number.isInteger(revision) && revision > this.maxRevision) this.maxRevision = revision;
  }

  private async get(
    http: ApiClient,
    clientId: number,
    node: number,
    key: string,
    known: Map<string, string>,
  ): Promise<void> {
    const input: ObjectInput = { type: 'get', key };
    const callAt = this.options.now();
    const reply = await http.send(`${this.options.apiUrl(node)}${configMapsPath}/${key}`, 'GET');
    if (reply.status === 200) {
      const item = itemOf(reply.body);
      if (item?.value !== undefined) {
        known.set(key, String(item.revision));
        this.seen(item.revision);
        const output: ObjectOutput = { type: 'value', value: item.value, revision: String(item.revision) };
        this.record(clientId, node, input, callAt, reply, 'ok', output);
        return;
      }
    } else if (reply.status === 404) {
      known.delete(key);
      this.record(clientId, node, input, callAt, reply, 'ok', { type: 'not-found' });
      return;
    }
    // A read that did not answer had no effect: it is left out of the history.
    this.record(clientId, node, input, callAt, reply, 'fail', undefined);
  }

  private async list(
    http: ApiClient,
    clientId: number,
    node: number,
    mode: ListMode,
    known: Map<string, string>,
  ): Promise<void> {
    const requested =
      mode === 'not-older-than' || mode === 'exact' ? Math.max(1, this.maxRevision - 5) : undefined;
    const query =
      mode === 'quorum'
        ? ''
        : mode === 'any'
          ? '?resourceVersion=0'
          : `?resourceVersion=${requested}&resourceVersionMatch=${mode === 'exact' ? 'Exact' : 'NotOlderThan'}`;
    const callAt = this.options.now();
    const reply = await http.send(`${this.options.apiUrl(node)}${configMapsPath}${query}`, 'GET');
    const body = reply.body as { metadata?: { resourceVersion?: string }; items?: unknown[] } | undefined;
    const revision = Number(body?.metadata?.resourceVersion);
    const ok = reply.status === 200 && Number.isInteger(revision) && Array.isArray(body?.items);
    const returnAt = this.options.now();
    this.count(`list-${mode}`, ok ? 'ok' : 'fail');
    this.result.records.push({
      clientId,
      node,
      op: 'list',
      input: { mode, requested },
      callAt,
      returnAt,
      outcome: ok ? 'ok' : 'fail',
      status: reply.status,
      ...(ok ? { output: { revision } } : {}),
    });
    if (!ok) return;
    const items = (body?.items ?? [])
      .map(itemOf)
      .filter((item): item is ListItem => item !== undefined && item.key.startsWith(keyPrefix));
    this.seen(revision);
    this.result.lists.push({ clientId, node, mode, requested, callAt, returnAt, revision, items });
    if (mode !== 'quorum') return;
    // A quorum list reads every key at one instant: for each key it is a linearizable get.
    const present = new Map(items.map((item) => [item.key, item]));
    for (let k = 0; k < this.options.keys; k++) {
      const key = `${keyPrefix}${k}`;
      const item = present.get(key);
      if (item === undefined) known.delete(key);
      else known.set(key, String(item.revision));
      const output: ObjectOutput =
        item?.value === undefined
          ? { type: 'not-found' }
          : { type: 'value', value: item.value, revision: String(item.revision) };
      this.result.operations.push({ clientId, input: { type: 'get', key }, output, callAt, returnAt });
    }
  }
}
