// The audit flags of `stoa serve` (kube-apiserver's names and checks): --audit-policy-file, --audit-log-path
// (`-` = stdout), --audit-log-format, --audit-log-mode, --audit-log-version and the rotation flags
// --audit-log-maxage, --audit-log-maxbackup, --audit-log-maxsize. The log options are checked only when a log
// path is given, as kube checks them.

import type { AuditFlags } from '../audit/auditor.js';
import {
  auditLogFormats,
  auditLogModes,
  type AuditLogFormat,
  type AuditLogMode,
} from '../audit/log-backend.js';
import { FlagError } from './flag-error.js';

export const auditFlagNames = [
  'audit-policy-file',
  'audit-log-path',
  'audit-log-format',
  'audit-log-mode',
  'audit-log-version',
  'audit-log-maxage',
  'audit-log-maxbackup',
  'audit-log-maxsize',
  'audit-log-compress',
] as const;

/** Flags that may be given without a value (`--audit-log-compress` = true). */
export const auditBoolFlags = new Set(['audit-log-compress']);

export const auditUsage = `  --audit-policy-file FILE               audit policy (audit.<domain>/v1 Policy, YAML or JSON); none = no auditing
  --audit-log-path PATH                  write audit events to this file ('-' = standard output)
  --audit-log-format F                   json (default; one Event per line) or legacy (one key="value" line)
  --audit-log-mode M                     blocking (default), blocking-strict or batch
  --audit-log-version GV                 apiVersion of the events (default audit.<domain>/v1, the only one)
  --audit-log-maxage DAYS                days to keep rotated audit files (default 0 = no limit)
  --audit-log-maxbackup N                rotated audit files to keep (default 0 = all)
  --audit-log-maxsize MB                 size of the audit file before it rotates (default 0 = 100)
  --audit-log-compress BOOL              gzip rotated audit files (default false)
`;

function integer(text: string | undefined, flag: string): number {
  if (text === undefined) return 0;
  if (!/^[-+]?\d+$/.test(text.trim())) {
    throw new FlagError(
      `invalid argument "${text}" for "--${flag}" flag: strconv.ParseInt: parsing "${text}": invalid syntax`,
    );
  }
  const n = Number(text);
  if (n < 0) throw new FlagError(`--${flag} ${n} can't be a negative number`);
  return n;
}

function boolean(text: string | undefined, flag: string): boolean {
  if (text === undefined) return false;
  // Go's strconv.ParseBool spellings.
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  throw new FlagError(
    `invalid argument "${text}" for "--${flag}" flag: strconv.ParseBool: parsing "${text}": invalid syntax`,
  );
}

export function parseAuditFlags(get: (name: string) => string | undefined, groupDomain: string): AuditFlags {
  const policyFile = get('audit-policy-file');
  const logPath = get('audit-log-path');
  const format = get('audit-log-format') ?? 'json';
  const mode = get('audit-log-mode') ?? 'blocking';
  const known = `audit.${groupDomain}/v1`;
  const version = get('audit-log-version') ?? known;
  const enabled = logPath !== undefined && logPath !== '';
  if (enabled) {
    if (!(auditLogModes as readonly string[]).includes(mode))
      throw new FlagError(`invalid audit log mode ${mode}, allowed modes are "${auditLogModes.join(',')}"`);
    if (version.split('/').length > 2) throw new FlagError(`unexpected GroupVersion string: ${version}`);
    if (version !== known) throw new FlagError(`invalid group version, allowed versions are ["${known}"]`);
    if (!(auditLogFormats as readonly string[]).includes(format))
      throw new FlagError(
        `invalid audit log format ${format}, allowed formats are "${auditLogFormats.join(',')}"`,
      );
  }
  const rotation = {
    maxAgeDays: integer(get('audit-log-maxage'), 'audit-log-maxage'),
    maxBackups: integer(get('audit-log-maxbackup'), 'audit-log-maxbackup'),
    maxSizeMegabytes: integer(get('audit-log-maxsize'), 'audit-log-maxsize'),
    compress: boolean(get('audit-log-compress'), 'audit-log-compress'),
  };
  return {
    ...(policyFile === undefined ? {} : { policyFile }),
    ...(logPath === undefined ? {} : { logPath }),
    logFormat: format as AuditLogFormat,
    logMode: mode as AuditLogMode,
    logVersion: version,
    rotation,
  };
}
