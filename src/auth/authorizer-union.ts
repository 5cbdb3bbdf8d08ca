// The union of authorizers (kube-apiserver's union.New): asked in order; the first allow or deny decides;
// when none has an opinion the result is no opinion, with their reasons joined. And the privileged-group
// authorizer in front of it: `system:masters` is allowed everything without asking any mode.

import type { Attributes, AuthorizationResult, Authorizer } from './authorizer.js';

export const privilegedGroup = 'system:masters';

export class UnionAuthorizer implements Authorizer {
  constructor(private readonly authorizers: () => readonly Authorizer[]) {}

  async authorize(attributes: Attributes): Promise<AuthorizationResult> {
    const reasons: string[] = [];
    const failures: string[] = [];
    for (const authorizer of this.authorizers()) {
      const result = await authorizer.authorize(attributes);
      if (result.error !== undefined) failures.push(result.error);
      if (result.decision !== 'noOpinion') return result;
      if (result.reason !== '') reasons.push(result.reason);
    }
    const error = aggregate(failures);
    return { decision: 'noOpinion', reason: reasons.join('\n'), ...(error === undefined ? {} : { error }) };
  }
}

/** Several errors as one message, the way Go's aggregate error prints them (one alone is itself). */
function aggregate(failures: readonly string[]): string | undefined {
  if (failures.length === 0) return undefined;
  if (failures.length === 1) return failures[0];
  return `[${failures.join(', ')}]`;
}

export function withPrivilegedGroup(next: Authorizer): Authorizer {
  return {
    authorize: (attributes) =>
      attributes.user.groups.includes(privilegedGroup)
        ? Promise.resolve({ decision: 'allow', reason: '' })
        : next.authorize(attributes),
  };
}
