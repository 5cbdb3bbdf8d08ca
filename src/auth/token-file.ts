// Static token file (--token-auth-file): CSV `token,user,uid[,"group1,group2",...]`. Tokens last until the
// server restarts with another file.

import { readFile } from 'node:fs/promises';
import type { AuthenticationResult, TokenAuthenticator, UserInfo } from './user.js';

/** Parses the token file; blank lines and `#` comments are skipped; an error names the line. */
export function parseTokenFile(text: string, source = 'token file'): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '' || line.trim().startsWith('#')) return;
    const fields: string[] = [];
    const re = /\s*("((?:[^"]|"")*)"|[^,]*)\s*(,|$)/gy;
    let m: RegExpExecArray | null;
    while (re.lastIndex < line.length && (m = re.exec(line)) !== null) {
      fields.push(m[2] !== undefined ? m[2].replace(/""/g, '"') : (m[1] ?? '').trim());
      if (m[3] === '') break;
    }
    const [token, name, uid, ...groupFields] = fields;
    if (token === undefined || token === '' || name === undefined || name === '' || uid === undefined) {
      throw new Error(`${source} line ${index + 1}: needs at least token, user name and uid`);
    }
    const groups = groupFields
      .flatMap((g) => g.split(','))
      .map((g) => g.trim())
      .filter((g) => g !== '');
    tokens.set(token, { name, uid, groups, extra: {} });
  });
  return tokens;
}

export async function loadTokenFile(path: string | undefined): Promise<Map<string, UserInfo>> {
  return path === undefined ? new Map() : parseTokenFile(await readFile(path, 'utf8'), path);
}

export class TokenFileAuthenticator implements TokenAuthenticator {
  readonly name = 'token-file';
  constructor(private readonly tokens: ReadonlyMap<string, UserInfo>) {}

  authenticateToken(token: string): Promise<AuthenticationResult> {
    const user = this.tokens.get(token);
    return Promise.resolve(user === undefined ? { kind: 'none' } : { kind: 'user', user });
  }
}
