// What a request asks to do (kube-apiserver's authorizer.Attributes) and the authorizer interface every mode
// (AlwaysAllow, AlwaysDeny, ABAC, RBAC, Node, Webhook) implements. The chain asks each in order; the first
// allow or deny decides; no opinion from all is a 403.

import type { UserInfo } from './user.js';

export interface Attributes {
  readonly user: UserInfo;
  /** get, list, watch, create, update, patch, delete, deletecollection, impersonate, bind, escalate, ...;
   * for non-resource requests the lower-case HTTP method. */
  readonly verb: string;
  readonly isResourceRequest: boolean;
  /** Non-resource requests: the URL path. */
  readonly path: string;
  readonly apiGroup: string;
  readonly apiVersion: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  /** Selector attributes (gate AuthorizeWithSelectors): the raw selectors of a list/watch/deletecollection. */
  readonly fieldSelector?: string;
  readonly labelSelector?: string;
  /** The same selectors as requirements (gate AuthorizeWithSelectors on, and the selector understood). They
   * can only limit a request: an authorizer that does not look at them still answers safely. */
  readonly fieldRequirements?: readonly SelectorRequirement[];
  readonly labelRequirements?: readonly SelectorRequirement[];
}

/** The attributes of a non-resource request (`/healthz`, `/version`, ...): a path and a verb, nothing else. */
export function nonResourceAttributes(user: UserInfo, verb: string, path: string): Attributes {
  return {
    user,
    verb,
    isResourceRequest: false,
    path,
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
}

/** authorization/v1 FieldSelectorRequirement / LabelSelectorRequirement. */
export interface SelectorRequirement {
  readonly key: string;
  /** In, NotIn, Exists, DoesNotExist. */
  readonly operator: string;
  readonly values: readonly string[];
}

export type Decision = 'allow' | 'deny' | 'noOpinion';

export interface AuthorizationResult {
  readonly decision: Decision;
  /** Why (appended to the 403 message as kube-apiserver does when non-empty). */
  readonly reason: string;
  /**
   * The authorizer could not decide (a webhook it could not reach, a match condition that failed). A request
   * that no authorizer allowed and that carries an error is a 500, not a 403, as kube-apiserver answers; an
   * access review reports it as `status.evaluationError`.
   */
  readonly error?: string;
}

export interface Authorizer {
  authorize(attributes: Attributes): Promise<AuthorizationResult>;
}
