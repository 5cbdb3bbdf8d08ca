// The AlwaysAllow and AlwaysDeny modes. As in kube-apiserver, AlwaysDeny has no opinion (with a reason), so
// the union ends in a 403 unless an earlier mode allowed.

import type { Authorizer } from './authorizer.js';

export const alwaysAllow: Authorizer = {
  authorize: () => Promise.resolve({ decision: 'allow', reason: '' }),
};

export const alwaysDeny: Authorizer = {
  authorize: () => Promise.resolve({ decision: 'noOpinion', reason: 'Everything is forbidden.' }),
};
