// --runtime-config (spec 9.2): comma-separated `key[=value]` pairs that enable or disable served API versions
// and resources, checked and applied as kube-apiserver 1.32 does (apiserver's resourceconfig and the API
// enablement options):
//   api/all, api/ga, api/beta, api/alpha = true|false     every version matching that level (exactly true/false)
//   GROUP/VERSION[=BOOL]                                  one version of a group (a missing value is true)
//   GROUP/VERSION/RESOURCE[=BOOL]                         one resource of a version (lowercase plural)
// The level keys apply first (all, ga, beta, alpha), then versions, then resources, so the most specific key
// wins. Unknown groups, versions not served in a known group, and malformed keys are refused at start, with
// kube-apiserver's messages. A disabled version or resource is gone from discovery and OpenAPI and answers 404;
// the server itself still uses it (the RBAC authorizer reads its objects whatever is served).

import type { KindDeclaration } from '../apimachinery/kind.js';
import { FlagError } from './flag-error.js';

const levelKeys = ['api/all', 'api/ga', 'api/beta', 'api/alpha'] as const;
type LevelKey = (typeof levelKeys)[number];

const levelMatches: Record<LevelKey, (version: string) => boolean> = {
  'api/all': () => true,
  'api/ga': (version) => /^v\d+$/.test(version),
  'api/beta': (version) => /^v\d+beta\d+$/.test(version),
  'api/alpha': (version) => /^v\d+alpha\d+$/.test(version),
};

function isLevelKey(key: string): key is LevelKey {
  return (levelKeys as readonly string[]).includes(key);
}

/** The flag's `key[=value]` pairs (repeatable; a later key wins), as Go's ConfigurationMap reads them. */
export function parseRuntimeConfig(values: readonly string[]): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const value of values) {
    for (const item of value.split(',')) {
      const trimmed = item.trim();
      if (trimmed === '') continue;
      const eq = trimmed.indexOf('=');
      pairs.set(eq < 0 ? trimmed : trimmed.slice(0, eq), eq < 0 ? '' : trimmed.slice(eq + 1));
    }
  }
  return pairs;
}

/** Go's strconv.ParseBool. */
function parseBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

/** A served group/version and its resources, as the kinds declare them. */
interface GroupVersions {
  readonly versions: Map<string, Set<string>>;
}

function servedGroups(kinds: readonly KindDeclaration[]): Map<string, GroupVersions> {
  const groups = new Map<string, GroupVersions>();
  for (const kind of kinds) {
    const entry = groups.get(kind.group) ?? { versions: new Map<string, Set<string>>() };
    for (const version of kind.versions) {
      const resources = entry.versions.get(version) ?? new Set<string>();
      resources.add(kind.plural);
      entry.versions.set(version, resources);
    }
    groups.set(kind.group, entry);
  }
  return groups;
}

/** Which versions and resources are served: the answer of a checked --runtime-config. */
export class ApiEnablement {
  private constructor(
    private readonly versionEnabled: ReadonlyMap<string, boolean>,
    private readonly resourceEnabled: ReadonlyMap<string, boolean>,
  ) {}

  /** Everything at its default: every stable version served (all of Stoa's kinds are stable). */
  static readonly defaults = new ApiEnablement(new Map(), new Map());

  /**
   * Checks the pairs against the kinds this server knows and resolves them, or throws a FlagError with
   * kube-apiserver's message. The kinds are built only when there are pairs to check.
   */
  static resolve(pairs: ReadonlyMap<string, string>, kinds: () => readonly KindDeclaration[]): ApiEnablement {
    if (pairs.size === 0) return ApiEnablement.defaults;
    if (pairs.size === 1 && pairs.get('api/all') === 'false') {
      throw new FlagError('invalid key with only api/all=false');
    }
    const groups = servedGroups(kinds());
    const unknownGroups: string[] = [];
    for (const key of pairs.keys()) {
      if (isLevelKey(key)) continue;
      const tokens = key.split('/');
      // As schema.ParseGroupVersion: a group (empty for the core group) and a non-empty version.
      if ((tokens.length !== 2 && tokens.length !== 3) || (tokens[1] ?? '') === '') {
        throw new FlagError(`runtime-config invalid key ${key}`);
      }
      const group = tokens[0] ?? '';
      if (!groups.has(group) && !unknownGroups.includes(group)) unknownGroups.push(group);
    }
    if (unknownGroups.length > 0) throw new FlagError(`unknown api groups ${unknownGroups.join(',')}`);

    // Every version starts at its default (Stoa serves stable versions only, all on), then the levels apply.
    const versionEnabled = new Map<string, boolean>();
    for (const [group, { versions }] of groups) {
      for (const version of versions.keys()) versionEnabled.set(`${group}/${version}`, levelDefault(version));
    }
    for (const level of levelKeys) {
      const value = pairs.get(level);
      if (value === undefined) continue;
      if (value !== 'true' && value !== 'false') throw new FlagError(`invalid value ${level}=${value}`);
      for (const groupVersion of versionEnabled.keys()) {
        const version = groupVersion.slice(groupVersion.lastIndexOf('/') + 1);
        if (levelMatches[level](version)) versionEnabled.set(groupVersion, value === 'true');
      }
    }
    const resourceEnabled = new Map<string, boolean>();
    const resourceKeys: [string, boolean][] = [];
    for (const [key, value] of pairs) {
      if (isLevelKey(key)) continue;
      const [group = '', version = '', resource] = key.split('/');
      if (groups.get(group)?.versions.has(version) !== true) {
        throw new FlagError(`group version ${group}/${version} that has not been registered`);
      }
      const enabled = value === '' ? true : parseBool(value);
      if (enabled === undefined) {
        throw new FlagError(
          `invalid value of ${key}: ${value}, err: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
        );
      }
      if (resource === undefined) {
        versionEnabled.set(`${group}/${version}`, enabled);
        continue;
      }
      if (resource.toLowerCase() !== resource) {
        throw new FlagError(
          `invalid key ${key}: group/version/resource and resource is always lowercase plural, not ${JSON.stringify(resource)}`,
        );
      }
      resourceKeys.push([`${group}/${version}/${resource}`, enabled]);
    }
    // Resources last: they have the highest priority.
    for (const [key, enabled] of resourceKeys) resourceEnabled.set(key, enabled);
    return new ApiEnablement(versionEnabled, resourceEnabled);
  }

  /** Whether requests to this group, version and resource are served. */
  served(group: string, version: string, resource: string): boolean {
    const explicit = this.resourceEnabled.get(`${group}/${version}/${resource}`);
    if (explicit !== undefined) return explicit;
    return this.versionEnabled.get(`${group}/${version}`) ?? levelDefault(version);
  }

  /** The kinds with only their served versions; a kind with none is left out (discovery, OpenAPI). */
  servedKinds(kinds: readonly KindDeclaration[]): KindDeclaration[] {
    return kinds.flatMap((kind) => {
      const versions = kind.versions.filter((version) => this.served(kind.group, version, kind.plural));
      if (versions.length === kind.versions.length) return [kind];
      return versions.length === 0 ? [] : [{ ...kind, versions }];
    });
  }
}

/** Stable versions are on by default; alpha and (post-1.22) beta versions off. */
function levelDefault(version: string): boolean {
  return levelMatches['api/ga'](version);
}
