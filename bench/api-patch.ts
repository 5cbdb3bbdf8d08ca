// The PATCH workloads of the API bench (bench/api.ts): JSON patch, merge patch, strategic merge patch and
// server-side apply on a Pod-sized object (a Deployment whose pod template is about 2 KiB of JSON).

export const patchBase = '/apis/apps/v1/namespaces/default/deployments';
export const patchObjects = 64;

export function podSized(name: string, image: string): Record<string, unknown> {
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

export interface PatchKind {
  readonly name: string;
  readonly contentType: string;
  readonly query: string;
  readonly body: (i: number, name: string) => unknown;
}

export const patchKinds: readonly PatchKind[] = [
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
