// One chaos run: start a cluster behind the proxy mesh, drive the workload and the watchers while the fault
// schedule plays, heal everything, wait for the nodes to converge, read the final state from every node, and
// check the history. The cluster, its processes, proxies and data directory are gone when this returns or
// throws (the data is copied to the report directory only if one is given and `keepData` is set).

import { createHash } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  acknowledgedChanges,
  checkConvergence,
  checkLinearizable,
  checkListReads,
  checkNoLostWrites,
  checkWatches,
  referenceValues,
  type CheckReport,
  type NodeFinalState,
  type Verdict,
} from './checks.js';
import type { ObjectOperation } from './checker/object-model.js';
import type { WatcherLog } from './checker/watch.js';
import { ChaosCluster } from './cluster.js';
import type { NetMode } from './peer-network.js';
import { describePlanned, inject, schedule, type FaultKind, type TimelineEntry } from './faults.js';
import { ApiClient } from './http.js';
import { Watchers } from './watchers.js';
import {
  configMapsPath,
  keyPrefix,
  Workload,
  type HistoryRecord,
  type ListItem,
  type OpCounts,
} from './workload.js';

export interface ChaosOptions {
  readonly nodes: number;
  readonly durationMs: number;
  readonly faults: readonly FaultKind[];
  readonly seed: number;
  readonly clients: number;
  readonly keys: number;
  readonly watchers: number;
  /** Peer faults through TCP proxies (default) or network namespaces with routes, nftables and tc netem (root). */
  readonly net?: NetMode;
  /** Time the linearizability search may take (over all objects). */
  readonly checkBudgetMs: number;
  /** Where the node data directories go (default: a temp dir, removed at the end). */
  readonly keepDataIn?: string;
  readonly log: (line: string) => void;
  readonly signal?: AbortSignal;
}

export interface ChaosReport {
  readonly seed: number;
  readonly command: string;
  readonly options: {
    nodes: number;
    durationMs: number;
    faults: readonly FaultKind[];
    clients: number;
    keys: number;
    watchers: number;
  };
  readonly startedAt: string;
  readonly elapsedMs: number;
  /** fail if any check failed; unknown if none failed but one could not decide; else pass. */
  readonly verdict: Verdict;
  readonly checks: readonly CheckReport[];
  readonly timeline: readonly TimelineEntry[];
  readonly counts: Record<string, OpCounts>;
  readonly okPerSecond: readonly number[];
  readonly watchers: readonly {
    id: string;
    records: number;
    reconnects: number;
    resyncs: number;
    lastRevision: number;
  }[];
  readonly finalNodes: readonly NodeFinalState[];
  readonly history: readonly HistoryRecord[];
  readonly watcherLogs: readonly WatcherLog[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const requestTimeoutMs = 4_000;
const convergeTimeoutMs = 60_000;

export function replayCommand(options: Omit<ChaosOptions, 'log' | 'checkBudgetMs'>): string {
  return (
    `npm run chaos -- --nodes ${options.nodes} --duration ${Math.round(options.durationMs / 1000)}s ` +
    `--faults ${options.faults.join(',')} --seed ${options.seed} --clients ${options.clients} ` +
    `--keys ${options.keys} --watchers ${options.watchers}` +
    (options.net === 'netns' ? ' --net netns' : '')
  );
}

async function waitForLeader(cluster: ChaosCluster, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await cluster.leader()) !== undefined) return;
    await sleep(200);
  }
  throw new Error(`no leader within ${timeoutMs / 1000}s`);
}

function hashItems(items: readonly ListItem[]): string {
  const text = [...items]
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((i) => `${i.key}\u0000${i.revision}\u0000${i.value ?? ''}`)
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

async function listItems(
  http: ApiClient,
  url: string,
): Promise<{ revision: number; items: ListItem[] } | undefined> {
  const reply = await http.send(url, 'GET');
  const body = reply.body as
    | {
        metadata?: { resourceVersion?: string };
        items?: { metadata?: { name?: string; resourceVersion?: string }; data?: { value?: string } }[];
      }
    | undefined;
  if (reply.status !== 200 || !Array.isArray(body?.items)) return undefined;
  return {
    revision: Number(body?.metadata?.resourceVersion),
    items: body.items
      .map((o) => ({
        key: o.metadata?.name ?? '',
        value: o.data?.value,
        revision: Number(o.metadata?.resourceVersion),
      }))
      .filter((i) => i.key.startsWith(keyPrefix)),
  };
}

/**
 * Waits until every node answers, one leads, and all have applied the leader's commit index; then reads each
 * node's objects locally (resourceVersion=0) until all hashes agree or the time is up.
 */
async function converge(
  cluster: ChaosCluster,
  http: ApiClient,
  log: (line: string) => void,
): Promise<NodeFinalState[]> {
  const deadline = Date.now() + convergeTimeoutMs;
  let states: NodeFinalState[] = [];
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const statuses = await Promise.all(cluster.nodes.map((_, i) => cluster.status(i)));
    const commit = Math.max(...statuses.map((s) => s?.commitIndex ?? 0));
    const caughtUp =
      statuses.every((s) => s !== undefined && s.appliedIndex >= commit) &&
      statuses.filter((s) => s?.role === 'leader').length === 1;
    if (caughtUp || Date.now() > deadline - 5_000) {
      states = await Promise.all(
        cluster.nodes.map(async (node, i): Promise<NodeFinalState> => {
          const list = await listItems(http, `${cluster.apiUrl(i)}${configMapsPath}?resourceVersion=0`);
          return {
            name: node.name,
            appliedIndex: statuses[i]?.appliedIndex,
            revision: statuses[i]?.revision,
            hash: list === undefined ? undefined : hashItems(list.items),
            objects: list?.items.length,
          };
        }),
      );
      if (new Set(states.map((s) => s.hash)).size === 1 && states[0]?.hash !== undefined) return states;
    }
    if (attempt % 10 === 0) log(`  waiting for the nodes to converge (commit index ${commit})`);
    await sleep(500);
  }
  return states;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log;
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  // Every time in the history and the timeline counts from the start of the workload.
  let origin = t0;
  const now = (): number => performance.now() - origin;
  const dataDir = await mkdtemp(join(tmpdir(), 'stoa-chaos-'));
  let cluster: ChaosCluster | undefined;
  const http: ApiClient[] = [];
  let watchers: Watchers | undefined;
  try {
    log(
      `chaos: seed ${options.seed}, ${options.nodes} nodes, ${Math.round(options.durationMs / 1000)}s, faults ${options.faults.join(',') || 'none'}`,
    );
    cluster = await ChaosCluster.start({
      nodes: options.nodes,
      seed: options.seed,
      dataDir,
      // A small watch window and short retention, so that resuming watchers and old reads meet 410 Gone.
      extraServeFlags: ['--watch-cache-size=50', '--storage-retention=30s', '--v=warn'],
      log,
      net: options.net ?? 'proxy',
      linkFaults: options.faults.filter((kind) => kind === 'loss' || kind === 'delay'),
    });
    const c = cluster;
    await waitForLeader(c, 30_000);
    log(`cluster up: ${c.nodes.map((n, i) => `${n.name} ${c.apiUrl(i)}`).join(', ')}`);

    const plan = schedule(options.seed, options.faults, options.nodes, options.durationMs);
    log(
      `fault schedule: ${plan.map((f) => `${(f.atMs / 1000).toFixed(1)}s ${describePlanned(f.fault)} for ${(f.durationMs / 1000).toFixed(1)}s`).join('; ') || 'none'}`,
    );

    watchers = new Watchers({
      watchers: options.watchers,
      nodes: options.nodes,
      seed: options.seed + 1,
      tls: c.tls,
      apiUrl: (i) => c.apiUrl(i),
      reconnectsMax: 10_000,
    });
    watchers.start();
    origin = performance.now();
    const workloadStart = origin;
    const workload = new Workload({
      clients: options.clients,
      keys: options.keys,
      nodes: options.nodes,
      seed: options.seed + 2,
      opsPerClientMax: 1_000_000,
      apiUrl: (i) => c.apiUrl(i),
      client: () => {
        const client = new ApiClient(c.tls, requestTimeoutMs);
        http.push(client);
        return client;
      },
      now,
    });
    const running = workload.run();

    const timeline: TimelineEntry[] = [];
    const since = (): number => Number(((performance.now() - workloadStart) / 1000).toFixed(1));
    let active = 'none';
    const progress = setInterval(() => {
      const counts = Object.values(workload.counts());
      const ok = counts.reduce((s, c2) => s + c2.ok, 0);
      const unknown = counts.reduce((s, c2) => s + c2.unknown, 0);
      const fail = counts.reduce((s, c2) => s + c2.fail, 0);
      log(`  ${since().toFixed(0)}s: ${ok} ok, ${unknown} unknown, ${fail} failed; fault: ${active}`);
    }, 5_000);
    try {
      for (const fault of plan) {
        if (options.signal?.aborted) break;
        const wait = fault.atMs - (performance.now() - workloadStart);
        if (wait > 0) await sleep(wait);
        const injected = await inject(c, fault.fault);
        active = injected.detail;
        timeline.push({ atS: since(), event: 'start', kind: fault.fault.kind, detail: injected.detail });
        log(`  ${since().toFixed(1)}s fault: ${injected.detail}`);
        const end = performance.now() + fault.durationMs;
        while (performance.now() < end && !options.signal?.aborted) await sleep(100);
        await injected.heal();
        active = 'none';
        timeline.push({ atS: since(), event: 'heal', kind: fault.fault.kind, detail: injected.detail });
        log(`  ${since().toFixed(1)}s healed: ${injected.detail}`);
      }
      while (performance.now() - workloadStart < options.durationMs && !options.signal?.aborted)
        await sleep(100);
    } finally {
      clearInterval(progress);
      workload.stop();
    }
    const result = await running;
    if (options.signal?.aborted) throw new Error('chaos run interrupted');

    log('healing every link and process; waiting for convergence');
    c.mesh.healAll();
    await c.resumeAll();
    await c.upAll();
    const finalHttp = new ApiClient(c.tls, requestTimeoutMs);
    http.push(finalHttp);
    const finalNodes = await converge(c, finalHttp, log);

    // A final linearizable read of every object: it joins the history, so a lost write breaks linearizability.
    const finalCall = now();
    const quorum = await listItems(finalHttp, `${c.apiUrl(0)}${configMapsPath}`);
    const finalReturn = now();
    const finalState = new Map<string, ListItem>();
    const operations: ObjectOperation[] = [...result.operations];
    if (quorum !== undefined) {
      for (const item of quorum.items) finalState.set(item.key, item);
      for (let k = 0; k < options.keys; k++) {
        const key = `${keyPrefix}${k}`;
        const item = finalState.get(key);
        operations.push({
          clientId: -1,
          input: { type: 'get', key },
          output:
            item?.value === undefined
              ? { type: 'not-found' }
              : { type: 'value', value: item.value, revision: String(item.revision) },
          callAt: finalCall,
          returnAt: finalReturn,
        });
      }
      // Let the watchers reach the final revision (bounded), so their spans cover the whole run.
      const until = Date.now() + 15_000;
      while (watchers.minRevision() < quorum.revision && Date.now() < until) await sleep(200);
    }
    await watchers.stop();
    const logs = watchers.logs();

    log('checking the history');
    const acknowledged = acknowledgedChanges(operations);
    const checks: CheckReport[] = [
      checkLinearizable(operations, options.checkBudgetMs),
      checkWatches(logs, acknowledged),
      checkListReads(result.lists, referenceValues(acknowledged, logs)),
      quorum === undefined
        ? {
            name: 'no acknowledged write lost',
            verdict: 'fail',
            summary: 'the final read did not answer',
            counterexample: [],
          }
        : checkNoLostWrites(operations, finalState, logs),
      checkConvergence(finalNodes, quorum === undefined ? undefined : hashItems(quorum.items)),
    ];
    return {
      seed: options.seed,
      command: replayCommand(options),
      options: {
        nodes: options.nodes,
        durationMs: options.durationMs,
        faults: options.faults,
        clients: options.clients,
        keys: options.keys,
        watchers: options.watchers,
      },
      startedAt,
      elapsedMs: Math.round(performance.now() - t0),
      verdict: checks.some((check) => check.verdict === 'fail')
        ? 'fail'
        : checks.some((check) => check.verdict === 'unknown')
          ? 'unknown'
          : 'pass',
      checks,
      timeline,
      counts: result.counts,
      okPerSecond: result.okPerSecond,
      watchers: watchers.stats(),
      finalNodes,
      history: result.records,
      watcherLogs: logs,
    };
  } finally {
    await watchers?.stop().catch(() => undefined);
    for (const client of http) client.close();
    await cluster?.close().catch(() => undefined);
    if (options.keepDataIn !== undefined) {
      await cp(dataDir, options.keepDataIn, { recursive: true }).catch(() => undefined);
    }
    await rm(dataDir, { recursive: true, force: true });
  }
}
