// Feature gates (spec 3.4): a registry with stages and defaults, set by --feature-gates. Alpha gates default off,
// beta on; GA gates are locked on (non-operational: disabling one fails); deprecated gates warn when set.

export type FeatureStage = 'ALPHA' | 'BETA' | 'GA' | 'DEPRECATED';

export interface FeatureSpec {
  readonly stage: FeatureStage;
  readonly default: boolean;
  /** GA and some deprecated gates: the value cannot be changed any more. */
  readonly lockToDefault: boolean;
}

export const knownFeatures = {
  APIResponseCompression: { stage: 'BETA', default: true, lockToDefault: false },
  WatchList: { stage: 'BETA', default: true, lockToDefault: false },
  ConsistentListFromCache: { stage: 'BETA', default: true, lockToDefault: false },
  AggregatedDiscoveryEndpoint: { stage: 'GA', default: true, lockToDefault: true },
  ServerSideApply: { stage: 'GA', default: true, lockToDefault: true },
  ServerSideFieldValidation: { stage: 'GA', default: true, lockToDefault: true },
  AuthorizeWithSelectors: { stage: 'ALPHA', default: false, lockToDefault: false },
  CBORServingAndStorage: { stage: 'ALPHA', default: false, lockToDefault: false },
  AllowUnsafeMalformedObjectDeletion: { stage: 'ALPHA', default: false, lockToDefault: false },
  ComponentSLIs: { stage: 'BETA', default: true, lockToDefault: false },
  DefaultHostNetworkHostPortsInPodTemplates: { stage: 'DEPRECATED', default: false, lockToDefault: false },
} as const satisfies Record<string, FeatureSpec>;

export type FeatureName = keyof typeof knownFeatures;

export interface FeatureGates {
  enabled(name: FeatureName): boolean;
  /** Every known gate with its value, for /metrics and logs. */
  all(): ReadonlyMap<FeatureName, boolean>;
}

export interface ParsedFeatureGates {
  readonly gates: FeatureGates;
  readonly warnings: readonly string[];
}

/** Parses `--feature-gates=A=true,B=false`; an unknown gate, a bad value or changing a locked gate throws. */
export function parseFeatureGates(text: string): ParsedFeatureGates {
  const values = new Map<FeatureName, boolean>();
  for (const [name, spec] of Object.entries(knownFeatures) as [FeatureName, FeatureSpec][])
    values.set(name, spec.default);
  const warnings: string[] = [];
  for (const pair of text.split(',').map((p) => p.trim())) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) throw new Error(`missing bool value for ${pair}`);
    const name = pair.slice(0, eq).trim();
    const raw = pair.slice(eq + 1).trim();
    if (!Object.hasOwn(knownFeatures, name)) throw new Error(`unrecognized feature gate: ${name}`);
    const feature = name as FeatureName;
    if (raw !== 'true' && raw !== 'false')
      throw new Error(`invalid value of ${name}=${raw}, err: invalid syntax`);
    const value = raw === 'true';
    const spec: FeatureSpec = knownFeatures[feature];
    if (spec.lockToDefault && value !== spec.default) {
      throw new Error(
        `cannot set feature gate ${name} to ${raw}, feature is locked to ${String(spec.default)}`,
      );
    }
    if (spec.stage === 'GA')
      warnings.push(`Setting GA feature gate ${name}=${raw}. It will be removed in a future release.`);
    if (spec.stage === 'DEPRECATED') {
      warnings.push(
        `Setting deprecated feature gate ${name}=${raw}. It will be removed in a future release.`,
      );
    }
    values.set(feature, value);
  }
  return {
    gates: { enabled: (name) => values.get(name) ?? false, all: () => values },
    warnings,
  };
}
