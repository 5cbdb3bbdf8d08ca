// The audit machinery of one server: the policy checker, the log backend and the output format, built from the
// --audit-* flags. No policy file (or no log path) means no Auditor: requests are not audited, as in kube.

import { readFile } from 'node:fs/promises';
import { eventJson, eventLegacyLine, type AuditEvent } from './event.js';
import {
  newLogBackend,
  RotatingFile,
  StdoutWriter,
  type AuditBackend,
  type AuditLogFormat,
  type AuditLogMode,
  type RotationOptions,
} from './log-backend.js';
import {
  AuditPolicyError,
  parseAuditPolicy,
  PolicyChecker,
  type AuditLevel,
  type AuditStage,
  type PolicyAttributes,
  type RequestAuditConfig,
} from './policy.js';

export interface AuditFlags {
  readonly policyFile?: string;
  /** `-` = standard output. */
  readonly logPath?: string;
  readonly logFormat: AuditLogFormat;
  readonly logMode: AuditLogMode;
  /** The events' apiVersion (`audit.<domain>/v1`). */
  readonly logVersion: string;
  readonly rotation: RotationOptions;
}

/** Reads and checks the policy file: kube-apiserver's messages, prefixed as its start-up error is. */
export async function loadAuditPolicy(file: string, auditGroup: string): Promise<PolicyChecker> {
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (error) {
    throw new AuditPolicyError(
      `loading audit policy file: failed to read file path "${file}": ${(error as Error).message}`,
    );
  }
  try {
    return new PolicyChecker(parseAuditPolicy(source, auditGroup));
  } catch (error) {
    if (error instanceof AuditPolicyError)
      throw new AuditPolicyError(`loading audit policy file: ${error.message}: from file ${file}`);
    throw error;
  }
}

/** What the auditor counts (kube-apiserver's apiserver_audit_* metrics). */
export interface AuditObserver {
  /** Every request's policy level (None included). */
  level(level: AuditLevel): void;
  /** An event handed to the backend. */
  event(): void;
  /** An event the backend could not write. */
  error(plugin: 'log'): void;
  /** A request refused because its RequestReceived event could not be stored (blocking-strict). */
  rejected(): void;
}

const noObserver: AuditObserver = { level: () => {}, event: () => {}, error: () => {}, rejected: () => {} };

export class Auditor {
  constructor(
    private readonly policy: PolicyChecker,
    private readonly backend: AuditBackend,
    private readonly format: AuditLogFormat,
    private readonly apiVersion: string,
    /** Wall clock in microseconds (stage timestamps). */
    readonly nowMicros: () => number,
    readonly observer: AuditObserver = noObserver,
  ) {}

  /** The policy's decision for a request, counted by level. */
  evaluate(attributes: PolicyAttributes): RequestAuditConfig {
    const config = this.policy.evaluate(attributes);
    this.observer.level(config.level);
    return config;
  }

  /** Builds the auditor the flags ask for, or undefined when auditing is off. Throws AuditPolicyError. */
  static async create(
    flags: AuditFlags,
    groupDomain: string,
    onError: (error: unknown) => void,
    nowMicros: () => number,
    observer: AuditObserver = noObserver,
  ): Promise<Auditor | undefined> {
    if (flags.policyFile === undefined || flags.policyFile === '') return undefined;
    const checker = await loadAuditPolicy(flags.policyFile, `audit.${groupDomain}`);
    if (flags.logPath === undefined || flags.logPath === '') return undefined;
    const counted = (error: unknown): void => {
      observer.error('log');
      onError(error);
    };
    const writer =
      flags.logPath === '-' ? new StdoutWriter() : new RotatingFile(flags.logPath, flags.rotation, onError);
    return new Auditor(
      checker,
      newLogBackend(writer, flags.logMode, counted),
      flags.logFormat,
      flags.logVersion,
      nowMicros,
      observer,
    );
  }

  /** Writes the event at `stage` unless the stage is omitted; false when the backend could not store it. */
  emit(event: AuditEvent, stage: AuditStage, omitStages: readonly AuditStage[]): boolean {
    if (omitStages.includes(stage)) return true;
    event.stage = stage;
    event.stageMicros = stage === 'RequestReceived' ? event.requestReceivedMicros : this.nowMicros();
    const line =
      this.format === 'json'
        ? `${JSON.stringify(eventJson(event, this.apiVersion))}\n`
        : `${eventLegacyLine(event)}\n`;
    this.observer.event();
    return this.backend.process(line);
  }

  close(): void {
    this.backend.close();
  }
}
