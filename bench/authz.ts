// Authorization bench, two parts.
// 1. In process (no server, Stoa only): RBAC decisions per second with 10,000 bindings against 10 bindings (the
//    index by subject should make them about equal), allowed and not, through the RBAC authorizer alone and
//    through the server's whole chain (system:masters check, Node, RBAC): the authorizer's own cost.
// 2. Through the API, on both targets of bench/api-targets.ts (Stoa on its own store, the same server on etcd):
//    10 and then 10,000 RoleBindings created through the API; at each size, SubjectAccessReviews per second
//    (allowed and denied), GETs of a ConfigMap impersonating bound users (RBAC on the request path), and the
//    time from creating a new RoleBinding until a SubjectAccessReview allows it (the RBAC index is fed by the
//    store's watch). Every loop is bounded in count and in time.
import type { BenchArgs } from './main.js';
import {
  expectStatus,
  runOnTargets,
  sleep,
  serverRunConfiguration,
  type Driver,
  type Phase,
} from './api-client.js';
import {
  defaultOut,
  loadavg,
  progress,
  reportHeader,
  row,
  runLoad,
  summarize,
  table,
  type BenchRow,
  type LatencySummary,
  type LoadResult,
  type Target,
} from './measure.js';
import { writeReports } from './report.js';
import type { Attributes, Authorizer } from '../src/auth/authorizer.js';
import type { UserInfo } from '../src/auth/user.js';
import { NodeAuthorizer } from '../src/auth/node-authorizer.js';
import { bootstrapPolicy } from '../src/auth/rbac/bootstrap.js';
import { RbacAuthorizer } from '../src/auth/rbac/authorizer.js';
import { RbacIndex } from '../src/auth/rbac/index.js';
import { UnionAuthorizer, withPrivilegedGroup } from '../src/auth/authorizer-union.js';

const decisionsMax = 20_000_000;
const namespaces = 1000;

interface Row {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
}

/** `bindings` RoleBindings (user-i in ns-(i mod 1000) to a Role there), the default policy, group bindings. */
function buildIndex(bindings: number): RbacIndex {
  const index = new RbacIndex();
  const domain = { groupDomain: 'svc.io', serviceClusterIpRange: '10.0.0.0/24' };
  const policy = bootstrapPolicy(domain);
  for (const role of policy.clusterRoles) index.upsert('ClusterRole', role);
  for (const binding of policy.clusterRoleBindings) index.upsert('ClusterRoleBinding', binding);
  for (let n = 0; n < Math.min(namespaces, bindings); n++) {
    index.upsert('Role', {
      metadata: { name: 'app', namespace: `ns-${n}` },
      rules: [
        { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['apps'], resources: ['deployments', 'deployments/scale'], verbs: ['*'] },
      ],
    });
  }
  for (let i = 0; i < bindings; i++) {
    index.upsert('RoleBinding', {
      metadata: { name: `user-${i}`, namespace: `ns-${i % namespaces}` },
      roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'app' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: `user-${i}` }],
    });
  }
  return index;
}

function attributes(user: UserInfo, namespace: string, verb: string, resource: string): Attributes {
  return {
    user,
    verb,
    isResourceRequest: true,
    path: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource,
    subresource: '',
    namespace,
    name: '',
  };
}

/** Decisions per second over `durationMs`, cycling through `requests`; checks every answer. */
async function rate(
  authorizer: Authorizer,
  requests: readonly Attributes[],
  expected: 'allow' | 'noOpinion',
  durationMs: number,
): Promise<number> {
  const start = performance.now();
  let done = 0;
  while (done < decisionsMax) {
    for (let i = 0; i < 1000; i++) {
      const a = requests[(done + i) % requests.length];
      if (a === undefined) throw new Error('no requests');
      const { decision } = await authorizer.authorize(a);
      if (decision !== expected) throw new Error(`unexpected ${decision} for ${a.user.name}`);
    }
    done += 1000;
    if (performance.now() - start >= durationMs) break;
  }
  return Math.round(done / ((performance.now() - start) / 1000));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** The in-process rows: decisions per second of the authorizer alone and of the chain. */
async function inProcessRows(args: BenchArgs): Promise<Row[]> {
  const durationMs = args.quick ? 200 : args.durationSeconds * 1000;
  const rows: Row[] = [];
  // Same users with few or many bindings (the index's promise), then requests spread over 1000 users.
  const setups: readonly [number, number][] = [
    [10, 10],
    [10_000, 10],
    [10_000, 1000],
  ];
  for (const [bindings, distinct] of setups) {
    const index = buildIndex(bindings);
    const rbac = new RbacAuthorizer(index);
    const chain = withPrivilegedGroup(
      new UnionAuthorizer(() => [
        new NodeAuthorizer({ podsOnNode: () => [] }, '', 'coordination.svc.io'),
        rbac,
      ]),
    );
    const users = Array.from({ length: distinct }, (_, i): UserInfo => ({
      name: `user-${(i * 7919) % bindings}`,
      uid: '',
      groups: ['system:authenticated'],
      extra: {},
    }));
    const allowed = users.map((u) =>
      attributes(u, `ns-${Number(u.name.slice(5)) % namespaces}`, 'list', 'configmaps'),
    );
    const denied = users.map((u) =>
      attributes(u, `ns-${Number(u.name.slice(5)) % namespaces}`, 'delete', 'pods'),
    );
    const phases: [string, Authorizer, readonly Attributes[], 'allow' | 'noOpinion'][] = [
      ['RBAC, allowed', rbac, allowed, 'allow'],
      ['RBAC, no rule matches', rbac, denied, 'noOpinion'],
      ['chain (masters, Node, RBAC), allowed', chain, allowed, 'allow'],
    ];
    for (const [label, authorizer, requests, expected] of phases) {
      const samples: number[] = [];
      for (let round = 0; round < args.rounds; round++)
        samples.push(await rate(authorizer, requests, expected, durationMs));
      rows.push({
        name: `${label}, ${bindings} bindings, ${distinct} users`,
        value: median(samples),
        unit: 'decisions/s',
      });
    }
  }
  const ratio = (label: string): number => {
    const small = rows.find((r) => r.name === `${label}, 10 bindings, 10 users`)?.value ?? NaN;
    const large = rows.find((r) => r.name === `${label}, 10000 bindings, 10 users`)?.value ?? NaN;
    return Math.round((large / small) * 100) / 100;
  };
  rows.push({
    name: 'RBAC allowed: 10,000 vs 10 bindings (same users)',
    value: ratio('RBAC, allowed'),
    unit: 'ratio',
  });
  return rows;
}

// ---- Through the API, on both targets ----

interface ServerConfig {
  readonly durationMs: number;
  readonly nodes: number;
  readonly concurrency: number;
  /** The binding counts measured, in order (10, then 10,000). */
  readonly sizes: readonly number[];
  /** New RoleBindings timed from create to the first allowed SubjectAccessReview, per size. */
  readonly effectSamples: number;
}

const benchNamespaces = 10;
const rbacBase = '/apis/rbac.authorization.svc.io/v1';
const reviews = '/apis/authorization.svc.io/v1/subjectaccessreviews';
/** Longest the bench waits for the server's RBAC index to reflect a binding. */
const effectTimeoutMs = 120_000;

const namespaceOf = (i: number): string => `authz-${i % benchNamespaces}`;

function roleBinding(name: string, namespace: string): unknown {
  return {
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name }],
  };
}

function createBinding(driver: Driver, w: number, name: string, namespace: string): Promise<string> {
  return expectStatus(
    driver
      .pick(w)
      .request('POST', `${rbacBase}/namespaces/${namespace}/rolebindings`, roleBinding(name, namespace)),
    201,
    `create RoleBinding ${namespace}/${name}`,
  );
}

/** A SubjectAccessReview for `user`; resolves with its `status.allowed`. */
async function review(
  driver: Driver,
  w: number,
  user: string,
  namespace: string,
  verb: string,
  resource: string,
): Promise<boolean> {
  const text = await expectStatus(
    driver.pick(w).request('POST', reviews, {
      apiVersion: 'authorization.svc.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user, resourceAttributes: { namespace, verb, resource } },
    }),
    201,
    `SubjectAccessReview for ${user}`,
  );
  return (JSON.parse(text) as { status?: { allowed?: boolean } }).status?.allowed === true;
}

const mayRead = (driver: Driver, w: number, user: string, namespace: string): Promise<boolean> =>
  review(driver, w, user, namespace, 'get', 'configmaps');

/** Asks until a SubjectAccessReview allows `user` (the server's RBAC index has its binding); the time it took. */
async function untilAllowed(driver: Driver, user: string, namespace: string, since: number): Promise<number> {
  const deadline = since + effectTimeoutMs;
  for (let attempt = 0; attempt < 1_000_000 && performance.now() < deadline; attempt++) {
    if (await mayRead(driver, 0, user, namespace)) return performance.now() - since;
    if (attempt >= 100) await sleep(1); // past the first hundred answers, stop spinning
  }
  throw new Error(`${user} was not allowed within ${effectTimeoutMs / 1000} s of its RoleBinding`);
}

/** Namespaces authz-0..9, each with a Role "reader" (get/list/watch ConfigMaps) and a ConfigMap "shared". */
async function createFixtures(driver: Driver): Promise<void> {
  for (let n = 0; n < benchNamespaces; n++) {
    const ns = namespaceOf(n);
    await expectStatus(
      driver.pick(n).request('POST', '/api/v1/namespaces', { metadata: { name: ns } }),
      201,
      ns,
    );
    await expectStatus(
      driver.pick(n).request('POST', `${rbacBase}/namespaces/${ns}/roles`, {
        metadata: { name: 'reader', namespace: ns },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      }),
      201,
      `Role ${ns}/reader`,
    );
    await expectStatus(
      driver.pick(n).request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
        metadata: { name: 'shared' },
        data: { k: 'v' },
      }),
      201,
      `ConfigMap ${ns}/shared`,
    );
  }
}

/** Untimed reviews and impersonated GETs right after the server started, so the first measured phase is warm. */
async function warmUp(driver: Driver, users: number): Promise<void> {
  await runLoad(
    8,
    5_000,
    async (w, i) => {
      const user = `user-${i % users}`;
      const namespace = namespaceOf(i % users);
      await mayRead(driver, w, user, namespace);
      await driver
        .pick(w)
        .request('GET', `/api/v1/namespaces/${namespace}/configmaps/shared`, undefined, undefined, {
          'impersonate-user': user,
        });
    },
    400,
  );
}

/** The server-level phases: per size, grow the bindings to it, then the SAR, GET and time-to-effect phases. */
function serverPhases(config: ServerConfig): Phase[] {
  const { concurrency, durationMs } = config;
  const phases: Phase[] = [];
  let previous = 0;
  for (const size of config.sizes) {
    const from = previous;
    previous = size;
    const pickUser = (driver: Driver): number => Math.floor(driver.random() * size);
    phases.push(
      {
        name: `create RoleBindings ${from}..${size - 1}, ${concurrency} concurrent`,
        run: async (driver) => {
          if (from === 0) await createFixtures(driver);
          let next = from;
          const load = await runLoad(
            concurrency,
            Math.max(durationMs, 600_000),
            async (w) => {
              const i = next++;
              await createBinding(driver, w, `user-${i}`, namespaceOf(i));
            },
            size - from,
          );
          if (load.errors > 0 || load.latency.count !== size - from) {
            throw new Error(
              `${load.latency.count} of ${size - from} RoleBindings created: ${load.firstError}`,
            );
          }
          // Measure only once the server's RBAC index has every binding (the last one created answers allowed).
          await untilAllowed(driver, `user-${size - 1}`, namespaceOf(size - 1), performance.now());
          if (from === 0) await warmUp(driver, size);
          return load;
        },
      },
      {
        name: `SubjectAccessReview allowed, ${size} bindings`,
        run: (driver) =>
          runLoad(concurrency, durationMs, async (w) => {
            const i = pickUser(driver);
            if (!(await mayRead(driver, w, `user-${i}`, namespaceOf(i)))) throw new Error(`user-${i} denied`);
          }),
      },
      {
        name: `SubjectAccessReview denied, ${size} bindings`,
        run: (driver) =>
          runLoad(concurrency, durationMs, async (w) => {
            const i = pickUser(driver);
            if (await review(driver, w, `user-${i}`, namespaceOf(i), 'delete', 'pods'))
              throw new Error(`user-${i} allowed to delete pods`);
          }),
      },
      {
        name: `GET ConfigMap as a bound user (Impersonate-User), ${size} bindings`,
        run: (driver) =>
          runLoad(concurrency, durationMs, async (w) => {
            const i = pickUser(driver);
            await expectStatus(
              driver
                .pick(w)
                .request(
                  'GET',
                  `/api/v1/namespaces/${namespaceOf(i)}/configmaps/shared`,
                  undefined,
                  undefined,
                  {
                    'impersonate-user': `user-${i}`,
                  },
                ),
              200,
              `GET as user-${i}`,
            );
          }),
      },
      {
        name: `new RoleBinding until allowed, ${size} bindings`,
        run: async (driver) => {
          const latencies: number[] = [];
          const end = performance.now() + Math.max(durationMs, 20_000);
          for (let k = 0; k < config.effectSamples && performance.now() < end; k++) {
            const name = `late-${size}-${k}`;
            const namespace = namespaceOf(k);
            const sent = performance.now();
            await createBinding(driver, 0, name, namespace);
            latencies.push(await untilAllowed(driver, name, namespace, sent));
          }
          return summarize(latencies);
        },
      },
    );
  }
  return phases;
}

export async function runAuthzBench(args: BenchArgs): Promise<void> {
  const quick = args.quick;
  const config: ServerConfig = {
    durationMs: (quick ? 0.5 : args.durationSeconds) * 1000,
    nodes: args.nodes ?? 3,
    concurrency: args.concurrency ?? 32,
    sizes: [10, quick ? 300 : 10_000],
    effectSamples: quick ? 5 : 100,
  };
  const loadBefore = loadavg();
  const started = new Date();
  progress(
    `authz bench: in process, then ${args.targets
      .map((t) =>
        t === 'stoa' ? `Stoa (${config.nodes} node(s))` : `Stoa API on ${config.nodes}-member etcd`,
      )
      .join(
        ' and ',
      )}; ${config.sizes.join(' then ')} RoleBindings, ${config.concurrency} concurrent, seed ${args.seed}`,
  );
  progress('  RBAC decisions in process');
  const inProcess = await inProcessRows(args);
  const phases = serverPhases(config);
  const { loads, failures } = await runOnTargets(args.targets, config.nodes, args.seed, phases);
  const rows = [
    ...serverRows(config, loads, args.targets),
    ...inProcess.map((r) => row(`in process: ${r.name}`, r.unit, true, r.value, NaN)),
  ];
  process.stdout.write(table(rows) + '\n');
  const out = args.out ?? defaultOut('authz');
  const report = {
    ...reportHeader('authz', started, loadBefore, args.seed),
    configuration: {
      ...serverRunConfiguration(args.targets, config.nodes, quick, config.durationMs),
      bindings: config.sizes,
      namespaces: benchNamespaces,
      concurrency: config.concurrency,
      effectSamples: config.effectSamples,
      inProcessRounds: args.rounds,
    },
    rows,
    loads,
    failures,
  };
  await writeReports(out, report, progress);
}

function serverRows(
  config: ServerConfig,
  loads: Record<string, Partial<Record<Target, LoadResult | LatencySummary>>>,
  targets: readonly Target[],
): BenchRow[] {
  const phases = serverPhases(config).map((p) => p.name);
  const figure = (phase: number, t: Target, f: (m: LoadResult | LatencySummary) => number): number => {
    const measured = loads[phases[phase]!]?.[t];
    return targets.includes(t) && measured !== undefined ? f(measured) : NaN;
  };
  const both = (phase: number, f: (m: LoadResult | LatencySummary) => number): [number, number] => [
    figure(phase, 'stoa', f),
    figure(phase, 'etcd', f),
  ];
  const throughput = (m: LoadResult | LatencySummary): number => ('opsPerSecond' in m ? m.opsPerSecond : NaN);
  const latency = (m: LoadResult | LatencySummary): LatencySummary => ('opsPerSecond' in m ? m.latency : m);
  const c = config.concurrency;
  const perSize = 5;
  const last = config.sizes.length - 1;
  return [
    row(
      `RoleBinding create throughput (to ${config.sizes[last]}), ${c} concurrent`,
      'ops/s',
      true,
      ...both(last * perSize, throughput),
    ),
    ...config.sizes.flatMap((size, s) => {
      const at = s * perSize;
      return [
        row(
          `SubjectAccessReview allowed, ${size} bindings, ${c} concurrent`,
          'ops/s',
          true,
          ...both(at + 1, throughput),
        ),
        row(
          `SubjectAccessReview allowed latency p99, ${size} bindings`,
          'ms',
          false,
          ...both(at + 1, (m) => latency(m).p99),
        ),
        row(
          `SubjectAccessReview denied, ${size} bindings, ${c} concurrent`,
          'ops/s',
          true,
          ...both(at + 2, throughput),
        ),
        row(
          `GET as a bound user (impersonated), ${size} bindings, ${c} concurrent`,
          'ops/s',
          true,
          ...both(at + 3, throughput),
        ),
        row(
          `GET as a bound user (impersonated) latency p99, ${size} bindings`,
          'ms',
          false,
          ...both(at + 3, (m) => latency(m).p99),
        ),
        row(
          `new RoleBinding to first allowed SAR p50, ${size} bindings`,
          'ms',
          false,
          ...both(at + 4, (m) => latency(m).p50),
        ),
        row(
          `new RoleBinding to first allowed SAR p99, ${size} bindings`,
          'ms',
          false,
          ...both(at + 4, (m) => latency(m).p99),
        ),
      ];
    }),
  ];
}
