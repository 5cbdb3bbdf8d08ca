// What /version answers, and the Kubernetes release whose behaviour this server follows.

import type { ReleaseVersion } from './metric-lifecycle.js';

export const serverVersion = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-stoa.0.1.0',
  gitCommit: '',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: `node${process.versions.node}`,
  compiler: 'tsc',
  platform: `${process.platform}/${process.arch}`,
};

/** The release as numbers: the metric life cycle counts minor releases from it. */
export const servedRelease: ReleaseVersion = {
  major: Number(serverVersion.major),
  minor: Number(serverVersion.minor),
};
