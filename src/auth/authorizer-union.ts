// The union of authorizers (kube-apiserver's union.New): asked in order; the first allow or deny decides;
// when none has an opinion the result is no opinion, with their reasons joined. And the privileged-group
// authorizer in front of it: `system:masters` is allowed everything without asking any mode.

import type { Attributes, AuthorizationResult, Authorizer } from './authorizer.js';

export const privilegedGroup = 'system:masters';

export class UnionAuthorizer implements Authorizer {
  constructor(private readonly authorizers: () => readonly Authorizer[]) {}

  async authorize(attributes: Attributes): Promise<AuthorizationResult> {
    const reasons: string[] = [];
    for (const authorizer of this.authorizers()) {
      const result = await authorizer.authorize(attributes);
      if (result.decision !== 'noOpinion') return result;
      if (result.reason !== '') reasons.push(result.reason);
    }
    return { decision: 'noOpinion', reason: reasons.join('\n') };
  }
}

export function withPrivilegedGroup(next: Authorizer): Authorizer {
  return {
    authorize: (attributes) =>
      attributes.user.groups.includes(privilegedGroup)
        ? Promise.resolve({ decision: 'allow', reason: '' })
        : next.authorize(attributes),
  };
}
