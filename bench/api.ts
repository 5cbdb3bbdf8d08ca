// API bench: the resource API over HTTPS/HTTP/2 with the admin client certificate, on two targets started the
// same way as separate processes (bench/api-targets.ts): Stoa on its own store (embedded for --nodes 1, a
// replicated cluster otherwise) and the same API server on an N-member etcd (--etcd-servers). Each phase runs
// on both targets back to back, alternating which goes first: create, get, list (one response and chunked),
// update, merge patch, watch delivery latency, fan-out to many watchers, and each patch type and server-side
// apply on a Pod-sized object (bench/api-patch.ts). Every loop is bounded in count and in time. Add a row by
// adding a phase to `phases` and a row to `rowsOf`.
import type { BenchArgs } from './main.js';
import { patchBase, patchKinds, patchObjects, podSized } from './api-patch.js';
import { authenticationRows } from './authn.js';
import {
  expectStatus,
  runOnTargets,
  sleep,
  serverRunConfiguration,
  type Driver,
  type Loads,
  type Measured,
} from './api-client.js';
import {
  defaultOut,
  loadavg,
  reportHeader,
  progress,
  row,
  runLoad,
  summarize,
  table,
  type BenchRow,
  type LatencySummary,
  type Target,
} from './measure.js';
import { writeReports } from './report.js';

interface ApiConfig {
  readonly durationMs: number;
  readonly nodes: number;
  readonly objects: number;
  readonly watchers: number;
  readonly concurrency: number;
  readonly valueBytes: number;
  readonly watchSamples: number;
  readonly fanoutSamples: number;
  readonly listChunk: number;
  readonly seed: number;
}

interface Phase {
  readonly name: string;
  run(driver: Driver, config: ApiConfig): Promise<Measured>;
}

const base = '/api/v1/namespaces/default/configmaps';

const configMap = (name: string, config: ApiConfig, extra: Record<string, string> = {}): unknown => ({
  metadata: { name, labels: { bench: 'api' } },
  data: { k: 'v'.repeat(config.valueBytes), ...extra },
});

/**
 * Writes to `name` one at a time and measures, per write, the time from sending it until `receivers` watch
 * streams have delivered it (1 receiver: delivery latency; N: fan-out, until the last one has it).
 */
async function deliveryLatency(
  driver: Driver,
  name: string,
  receivers: number,
  samples: number,
  timeBoxMs: number,
): Promise<LatencySummary> {
  const received = new Map<string, number>();
  let waiting: { n: string; resolve: () => void } | undefined;
  const onLine = (line: string): void => {
    const n = (JSON.parse(line) as { object?: { data?: { n?: string } } }).object?.data?.n;
    if (n === undefined) return;
    const count = (received.get(n) ?? 0) + 1;
    received.set(n, count);
    if (waiting !== undefined && waiting.n === n && count >= receivers) waiting.resolve();
  };
  const writer = driver.pick(1);
  await expectStatus(
    writer.request('POST', base, { metadata: { name }, data: { n: 'start' } }),
    201,
    `create ${name}`,
  );
  // A watch the server refuses (e.g. 504 when its cache is not caught up within 3 s) is opened again, as a
  // client's reflector does; the retries are reported.
  let refused = 0;
  const stops: (() => void)[] = [];
  const open = (w: number): void => {
    stops[w] = driver
      .pick(w)
      .stream(`${base}?watch=1&fieldSelector=metadata.name%3D${name}`, onLine, (status) => {
        if (status === 200 || refused >= receivers * 20) return;
        refused++;
        stops[w]?.();
        setTimeout(() => open(w), 100).unref();
      });
  };
  for (let w = 0; w < receivers; w++) open(w);
  const latencies: number[] = [];
  try {
    // Every watcher first sees the object (ADDED), so each is connected before the first sample.
    for (let spin = 0; spin < 6000 && (received.get('start') ?? 0) < receivers; spin++) await sleep(5);
    if ((received.get('start') ?? 0) < receivers) {
      throw new Error(
        `only ${received.get('start') ?? 0} of ${receivers} watchers connected (${refused} refused and retried)`,
      );
    }
    if (refused > 0) progress(`    ${driver.target.target}: ${refused} watch requests refused and retried`);
    const end = performance.now() + timeBoxMs;
    for (let i = 0; i < samples && performance.now() < end; i++) {
      const n = String(i);
      const sent = performance.now();
      const arrived = new Promise<boolean>((resolve) => {
        waiting = { n, resolve: () => resolve(true) };
        setTimeout(() => resolve(false), 10_000).unref();
      });
      await expectStatus(
        writer.request('PATCH', `${base}/${name}`, { data: { n } }, 'application/merge-patch+json'),
        200,
        `patch ${name}`,
      );
      if ((received.get(n) ?? 0) >= receivers || (await arrived)) latencies.push(performance.now() - sent);
      waiting = undefined;
    }
  } finally {
    for (const stop of stops) stop();
  }
  return summarize(latencies);
}

/** The measured phases, in order. Each returns the distribution its rows and plots come from. */
function phases(config: ApiConfig): Phase[] {
  const { durationMs, concurrency, objects } = config;
  return [
    {
      name: `create ${objects} objects, ${concurrency} concurrent`,
      run: async (driver) => {
        let next = 0;
        return runLoad(
          concurrency,
          Math.max(durationMs, 120_000),
          async () => {
            const i = next++;
            await expectStatus(
              driver.pick(i).request('POST', base, configMap(`cm-${i}`, config)),
              201,
              `create cm-${i}`,
            );
          },
          objects,
        );
      },
    },
    {
      name: `get, ${concurrency} concurrent`,
      run: (driver) =>
        runLoad(concurrency, durationMs, async (w) => {
          const i = Math.floor(driver.random() * objects);
          await expectStatus(driver.pick(w).request('GET', `${base}/cm-${i}`), 200, `get cm-${i}`);
        }),
    },
    {
      name: `list ${objects}, one response`,
      run: (driver) =>
        runLoad(1, durationMs, () => expectStatus(driver.pick(0).request('GET', base), 200, 'list'), 1000),
    },
    {
      name: `list ${objects}, chunks of ${config.listChunk}`,
      run: (driver) =>
        runLoad(
          1,
          durationMs,
          async () => {
            let token = '';
            for (let page = 0; page < 10_000; page++) {
              const text = await expectStatus(
                driver
                  .pick(0)
                  .request(
                    'GET',
                    `${base}?limit=${config.listChunk}${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`,
                  ),
                200,
                'list chunk',
              );
              token = (JSON.parse(text) as { metadata: { continue?: string } }).metadata.continue ?? '';
              if (token === '') return;
            }
          },
          1000,
        ),
    },
    {
      name: `update (PUT), ${concurrency} concurrent`,
      run: (driver) =>
        runLoad(concurrency, durationMs, async (w, i) => {
          // Each worker updates its own objects, so unconditional PUTs never conflict.
          const n = (w + i * concurrency) % objects;
          await expectStatus(
            driver.pick(w).request('PUT', `${base}/cm-${n}`, configMap(`cm-${n}`, config, { u: String(i) })),
            200,
            `update cm-${n}`,
          );
        }),
    },
    {
      name: `merge patch, ${concurrency} concurrent`,
      run: (driver) =>
        runLoad(concurrency, durationMs, async (w, i) => {
          const n = (w + i * concurrency) % objects;
          await expectStatus(
            driver
              .pick(w)
              .request(
                'PATCH',
                `${base}/cm-${n}`,
                { data: { p: String(i) } },
                'application/merge-patch+json',
              ),
            200,
            `patch cm-${n}`,
          );
        }),
    },
    {
      name: 'watch delivery latency',
      run: (driver) =>
        deliveryLatency(driver, 'latency', 1, config.watchSamples, Math.max(durationMs, 10_000)),
    },
    {
      name: `fan-out to ${config.watchers} watchers`,
      run: (driver) =>
        deliveryLatency(
          driver,
          'fanout',
          config.watchers,
          config.fanoutSamples,
          Math.max(durationMs, 20_000),
        ),
    },
    // Each patch type and server-side apply on Pod-sized Deployments (bench/api-patch.ts); the first creates them.
    ...patchKinds.map((kind, k): Phase => ({
      name: `${kind.name} on a Pod-sized object, ${concurrency} concurrent`,
      run: async (driver) => {
        if (k === 0) {
          for (let i = 0; i < patchObjects; i++) {
            await expectStatus(
              driver.pick(i).request('POST', patchBase, podSized(`patch-${i}`, 'app:0')),
              201,
              `create patch-${i}`,
            );
          }
        }
        let n = 1;
        return runLoad(concurrency, durationMs, async (w, i) => {
          const name = `patch-${(w + i * concurrency) % patchObjects}`;
          await expectStatus(
            driver
              .pick(w)
              .request('PATCH', `${patchBase}/${name}${kind.query}`, kind.body(n++, name), kind.contentType),
            200,
            `${kind.name} ${name}`,
          );
        });
      },
    })),
  ];
}

function rowsOf(config: ApiConfig, loads: Loads, targets: readonly Target[]): BenchRow[] {
  const names = phases(config).map((p) => p.name);
  const figure = (phase: number, t: Target, f: (m: Measured) => number): number => {
    const measured = loads[names[phase]!]?.[t];
    return targets.includes(t) && measured !== undefined ? f(measured) : NaN;
  };
  const throughput = (m: Measured): number => ('opsPerSecond' in m ? m.opsPerSecond : NaN);
  const latency = (m: Measured): LatencySummary => ('opsPerSecond' in m ? m.latency : m);
  const both = (phase: number, f: (m: Measured) => number): [number, number] => [
    figure(phase, 'stoa', f),
    figure(phase, 'etcd', f),
  ];
  const { objects, concurrency, watchers } = config;
  return [
    row(`create throughput, ${concurrency} concurrent`, 'ops/s', true, ...both(0, throughput)),
    row(`create latency p99, ${concurrency} concurrent`, 'ms', false, ...both(0, (m) => latency(m).p99)),
    row(`get throughput, ${concurrency} concurrent`, 'ops/s', true, ...both(1, throughput)),
    row(`get latency p99, ${concurrency} concurrent`, 'ms', false, ...both(1, (m) => latency(m).p99)),
    row(`list ${objects}, one response, p50`, 'ms', false, ...both(2, (m) => latency(m).p50)),
    row(
      `list ${objects}, chunks of ${config.listChunk}, p50`,
      'ms',
      false,
      ...both(3, (m) => latency(m).p50),
    ),
    row(`update (PUT) throughput, ${concurrency} concurrent`, 'ops/s', true, ...both(4, throughput)),
    row(
      `update (PUT) latency p99, ${concurrency} concurrent`,
      'ms',
      false,
      ...both(4, (m) => latency(m).p99),
    ),
    row(`merge patch throughput, ${concurrency} concurrent`, 'ops/s', true, ...both(5, throughput)),
    row('watch delivery latency p50 (write sent to event)', 'ms', false, ...both(6, (m) => latency(m).p50)),
    row('watch delivery latency p99 (write sent to event)', 'ms', false, ...both(6, (m) => latency(m).p99)),
    row(`fan-out to ${watchers} watchers, last delivery p50`, 'ms', false, ...both(7, (m) => latency(m).p50)),
    row(`fan-out to ${watchers} watchers, last delivery p99`, 'ms', false, ...both(7, (m) => latency(m).p99)),
    ...patchKinds.flatMap((kind, k) => [
      row(`${kind.name} throughput, ${concurrency} concurrent`, 'ops/s', true, ...both(8 + k, throughput)),
      row(
        `${kind.name} latency p50, ${concurrency} concurrent`,
        'ms',
        false,
        ...both(8 + k, (m) => latency(m).p50),
      ),
      row(
        `${kind.name} latency p99, ${concurrency} concurrent`,
        'ms',
        false,
        ...both(8 + k, (m) => latency(m).p99),
      ),
    ]),
  ];
}

export async function runApiBench(args: BenchArgs): Promise<void> {
  const quick = args.quick;
  const config: ApiConfig = {
    durationMs: (quick ? 0.5 : args.durationSeconds) * 1000,
    nodes: args.nodes ?? 3,
    objects: quick ? 500 : 10_000,
    watchers: quick ? 50 : 1000,
    concurrency: args.concurrency ?? 32,
    valueBytes: args.valueBytes ?? 256,
    watchSamples: quick ? 50 : 1000,
    fanoutSamples: quick ? 5 : 50,
    listChunk: 500,
    seed: args.seed,
  };
  const log = progress;
  const loadBefore = loadavg();
  const started = new Date();
  log(
    `api bench: ${args.targets
      .map((t) =>
        t === 'stoa' ? `Stoa (${config.nodes} node(s))` : `Stoa API on ${config.nodes}-member etcd`,
      )
      .join(' and ')}; ${config.objects} objects, ${config.concurrency} concurrent, seed ${args.seed}`,
  );
  const { loads, failures } = await runOnTargets(
    args.targets,
    config.nodes,
    args.seed,
    phases(config).map((phase) => ({ name: phase.name, run: (driver) => phase.run(driver, config) })),
  );

  // Authentication cost per request, per method: measured in this process on Stoa's own authenticators (etcd has
  // no counterpart, so those rows show '-' for it).
  log('  authentication cost per method (in process)');
  const authn = await authenticationRows(quick);
  const rows = [
    ...rowsOf(config, loads, args.targets),
    ...authn.map((r) => row(r.name, r.unit, false, r.value, NaN)),
  ];
  process.stdout.write(table(rows) + '\n');
  const out = args.out ?? defaultOut('api');
  const report = {
    ...reportHeader('api', started, loadBefore, args.seed),
    configuration: {
      ...serverRunConfiguration(args.targets, config.nodes, quick, config.durationMs),
      objects: config.objects,
      concurrency: config.concurrency,
      valueBytes: config.valueBytes,
      watchers: config.watchers,
      watchSamples: config.watchSamples,
      fanoutSamples: config.fanoutSamples,
    },
    rows,
    loads,
    failures,
  };
  await writeReports(out, report, log);
}
