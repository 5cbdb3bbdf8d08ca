// The one registration list of built-in kinds. A kind appears here once; everything else derives from it.

import type { DomainContext, KindDeclaration } from '../apimachinery/kind.js';
import { errors } from '../apimachinery/status.js';
import { accessReviewKinds, type AccessReviewer } from '../auth/access-review.js';
import { configMapKind } from './configmap/index.js';
import { deploymentKind } from './deployment/index.js';
import { endpointsKind } from './endpoints/index.js';
import { coreEventKind, eventsGroupEventKind } from './event/index.js';
import { leaseKind } from './lease/index.js';
import { namespaceKind } from './namespace/index.js';
import { nodeKind } from './node/index.js';
import { podKind } from './pod/index.js';
import { rbacKinds } from './rbac/index.js';
import { secretKind } from './secret/index.js';
import { selfSubjectReviewKind } from './selfsubjectreview/index.js';
import { serviceKind } from './service/index.js';
import { serviceAccountKind } from './serviceaccount/index.js';

/** Until the server wires its authorizers in, access reviews answer 503. */
const unwiredReviewer = (): AccessReviewer => {
  throw errors.unavailable('authorization is not ready');
};

export function builtinKinds(
  ctx: DomainContext,
  reviewer: () => AccessReviewer = unwiredReviewer,
): KindDeclaration[] {
  return [
    namespaceKind(ctx),
    nodeKind(ctx),
    podKind(ctx),
    serviceKind(ctx),
    endpointsKind(ctx),
    configMapKind(ctx),
    secretKind(ctx),
    serviceAccountKind(ctx),
    coreEventKind(ctx),
    eventsGroupEventKind(ctx),
    leaseKind(ctx),
    deploymentKind(ctx),
    ...rbacKinds(ctx),
    selfSubjectReviewKind(ctx),
    ...accessReviewKinds(ctx, reviewer),
  ];
}
