// The RBAC authorizer: allow when a rule of a role bound to the user (by name, group or service account)
// matches the request; otherwise no opinion (RBAC never denies).

import type { Attributes, AuthorizationResult, Authorizer } from '../authorizer.js';
import { allowReason, type RbacIndex } from './index.js';
import { ruleAllows } from './rules.js';

export class RbacAuthorizer implements Authorizer {
  constructor(readonly index: RbacIndex) {}

  authorize(attributes: Attributes): Promise<AuthorizationResult> {
    return Promise.resolve(this.decide(attributes));
  }

  decide(attributes: Attributes): AuthorizationResult {
    const namespace = attributes.isResourceRequest ? attributes.namespace : '';
    const found = this.index.visit(attributes.user, namespace, (r) => ruleAllows(attributes, r.rule));
    return found === undefined
      ? { decision: 'noOpinion', reason: '' }
      : { decision: 'allow', reason: allowReason(found) };
  }
}
