// Authorization bench: RBAC decisions per second with 10,000 bindings against 10 bindings (the index by
// subject should make them about equal), allowed and not, through the RBAC authorizer alone and through the
// server's whole chain (system:masters check, Node, RBAC). In process, no server: this measures the decision,
// not HTTP. Every loop is bounded in count and in time.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import type { BenchArgs } from './main.js';
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

export async function runAuthzBench(args: BenchArgs): Promise<void> {
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
  process.stdout.write(`authz bench (${cpus().length} CPUs, in process)\n`);
  for (const r of rows)
    process.stdout.write(`  ${r.name.padEnd(66)} ${String(r.value).padStart(12)} ${r.unit}\n`);
  const out = args.out ?? `bench/results/authz-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, JSON.stringify({ scenario: 'authz', quick: args.quick, rows }, null, 2));
}
