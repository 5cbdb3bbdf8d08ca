// Anonymous access: `--anonymous-auth` (default true) or the authentication configuration's `anonymous`
// (`enabled`, `conditions[].path`), never both. A request with no credential is then system:anonymous in group
// system:unauthenticated (authorization decides what it may do); with conditions only the listed paths are.

export interface AnonymousConfig {
  allows(path: string): boolean;
}

export function anonymousConfig(enabled: boolean, paths?: readonly string[]): AnonymousConfig {
  if (!enabled) return { allows: () => false };
  if (paths === undefined || paths.length === 0) return { allows: () => true };
  const allowed = new Set(paths);
  return { allows: (path) => allowed.has(path) };
}
