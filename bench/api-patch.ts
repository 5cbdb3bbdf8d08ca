// API bench rows for PATCH: JSON patch, merge patch, strategic merge patch and server-side apply on a Pod-sized
// object (a Deployment whose pod template is about 2 KiB of JSON): latency (one at a time) and throughput
// (32 concurrent). Every loop is bounded in count and in time.

interface Row {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
}

type Request = (
  i: number,
  method: string,
  path: string,
  body: unknown,
  contentType?: string,
) => Promise<{ status: number; text: string }>;

const base = '/apis/apps/v1/namespaces/default/deployments';
const objects = 64;
const concurrency = 32;

function podSized(name: string, image: string): Record<string, unknown> {
  const env = Array.from({ length: 12 }, (_, k) => ({ name: `VAR_${k}`, value: 'v'.repeat(40) }));
  const container = (n: string, img: string): unknown => ({
    name: n,
    image: img,
    args: ['--port=8080', '--log-level=info'],
    ports: [{ containerPort: 8080 }, { containerPort: 9090, name: 'metrics' }],
    env,
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
    volumeMounts: [{ name: 'data', mountPath: '/data' }],
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { app: name, bench: 'patch' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations: { n: '0' } },
        spec: {
          containers: [container('app', image), container('sidecar', 'sidecar:1')],
          volumes: [{ name: 'data', emptyDir: {} }],
        },
      },
    },
  };
}

interface PatchKind {
  readonly name: string;
  readonly contentType: string;
  readonly query: string;
  readonly body: (i: number, name: string) => unknown;
}

const kinds: readonly PatchKind[] = [
  {
    name: 'JSON patch',
    contentType: 'application/json-patch+json',
    query: '',
    body: (i) => [{ op: 'replace', path: '/spec/template/metadata/annotations/n', value: String(i) }],
  },
  {
    name: 'merge patch',
    contentType: 'application/merge-patch+json',
    query: '',
    body: (i) => ({ spec: { template: { metadata: { annotations: { n: String(i) } } } } }),
  },
  {
    name: 'strategic merge patch',
    contentType: 'application/strategic-merge-patch+json',
    query: '',
    body: (i) => ({ spec: { template: { spec: { containers: [{ name: 'app', image: `app:${i}` }] } } } }),
  },
  {
    name: 'server-side apply',
    contentType: 'application/apply-patch+yaml',
    query: '?fieldManager=bench&force=true',
    body: (i, name) => podSized(name, `app:${i}`),
  },
];

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export async function patchRows(request: Request, durationMs: number, quick: boolean): Promise<Row[]> {
  const rows: Row[] = [];
  for (let i = 0; i < objects; i++) {
    const r = await request(i, 'POST', base, podSized(`patch-${i}`, 'app:0'));
    if (r.status !== 201) throw new Error(`create patch-${i}: ${r.status} ${r.text}`);
  }
  const samples = quick ? 50 : 500;
  let n = 1;
  for (const kind of kinds) {
    const send = async (i: number): Promise<void> => {
      const name = `patch-${i % objects}`;
      const r = await request(
        i,
        'PATCH',
        `${base}/${name}${kind.query}`,
        kind.body(n++, name),
        kind.contentType,
      );
      if (r.status !== 200) throw new Error(`${kind.name} ${name}: ${r.status} ${r.text}`);
    };
    const latencies: number[] = [];
    const latencyEnd = performance.now() + Math.max(durationMs, 1000);
    for (let i = 0; i < samples && performance.now() < latencyEnd; i++) {
      const start = performance.now();
      await send(i);
      latencies.push(performance.now() - start);
    }
    latencies.sort((a, b) => a - b);
    rows.push({ name: `${kind.name} latency p50`, value: percentile(latencies, 50), unit: 'ms' });
    rows.push({ name: `${kind.name} latency p99`, value: percentile(latencies, 99), unit: 'ms' });
    let next = 0;
    let done = 0;
    const start = performance.now();
    const end = start + durationMs;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < 1_000_000 && performance.now() < end) {
          await send(next++);
          done++;
        }
      }),
    );
    rows.push({
      name: `${kind.name} (${concurrency} concurrent)`,
      value: done / ((performance.now() - start) / 1000),
      unit: 'ops/s',
    });
  }
  return rows;
}
