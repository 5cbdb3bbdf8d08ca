// Inflight limits (--max-requests-inflight, --max-mutating-requests-inflight): beyond them 429 with Retry-After.
// Long-running requests (watches) are not counted.

import { errors } from '../apimachinery/status.js';
import type { Handler } from './handler.js';

export interface InflightGauge {
  set(kind: 'readOnly' | 'mutating', value: number): void;
}

const mutatingVerbs = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export function withInflightLimit(
  next: Handler,
  readOnlyMax: number,
  mutatingMax: number,
  gauge: InflightGauge,
): Handler {
  const inflight = { readOnly: 0, mutating: 0 };
  return async (ctx) => {
    // Long-running requests (watches, proxied connections) are not counted, as in kube-apiserver.
    if (ctx.info.verb === 'watch' || (ctx.info.isResourceRequest && ctx.info.subresource === 'proxy')) {
      await next(ctx);
      return;
    }
    const kind = mutatingVerbs.has(ctx.info.verb) ? 'mutating' : 'readOnly';
    const max = kind === 'mutating' ? mutatingMax : readOnlyMax;
    if (max > 0 && inflight[kind] >= max) throw errors.tooManyRequests();
    inflight[kind]++;
    gauge.set(kind, inflight[kind]);
    try {
      await next(ctx);
    } finally {
      inflight[kind]--;
      gauge.set(kind, inflight[kind]);
    }
  };
}
