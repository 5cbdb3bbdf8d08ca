// The authenticating proxy (--requestheader-*): a front proxy that authenticated the user passes it in headers
// (X-Remote-User, X-Remote-Group repeatable, X-Remote-Extra-<key> repeatable with the key percent-encoded). The
// headers count only on a connection whose client certificate verifies under --requestheader-client-ca-file
// and, when --requestheader-allowed-names is set, whose CN is one of those names.

import type { X509Certificate } from 'node:crypto';
import type { Http2ServerRequest } from 'node:http2';
import { CertificateVerifier, peerChain, subjectOf, tlsSocketOf } from './client-cert.js';
import type { AuthenticationResult, Authenticator } from './user.js';

export interface RequestHeaderOptions {
  readonly clientCas: readonly X509Certificate[];
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

export const requestHeaderDefaults = {
  usernameHeaders: ['X-Remote-User'],
  groupHeaders: ['X-Remote-Group'],
  extraHeaderPrefixes: ['X-Remote-Extra-'],
} as const;

/** Every value of every header line with this name (repeated headers stay separate values). */
export function headerValues(req: Http2ServerRequest, name: string): string[] {
  const lower = name.toLowerCase();
  const raw = req.rawHeaders;
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if ((raw[i] ?? '').toLowerCase() === lower) out.push(raw[i + 1] ?? '');
  }
  return out;
}

/** Header lines whose name starts with a prefix: [suffix (as sent), value] pairs. */
export function headersWithPrefix(req: Http2ServerRequest, prefix: string): [string, string][] {
  const lower = prefix.toLowerCase();
  const raw = req.rawHeaders;
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] ?? '').toLowerCase();
    if (name.startsWith(lower) && name.length > lower.length)
      out.push([name.slice(lower.length), raw[i + 1] ?? '']);
  }
  return out;
}

/** An extra key from a header name: lower-case, percent-decoded (kept as sent when the escape is broken). */
export function extraKeyOf(headerSuffix: string): string {
  const lower = headerSuffix.toLowerCase();
  try {
    return decodeURIComponent(lower);
  } catch {
    return lower;
  }
}

export class RequestHeaderAuthenticator implements Authenticator {
  readonly name = 'request-header';
  private readonly verifier: CertificateVerifier;

  constructor(private readonly options: RequestHeaderOptions) {
    this.verifier = new CertificateVerifier(options.clientCas);
  }

  authenticate(req: Http2ServerRequest): Promise<AuthenticationResult> {
    return Promise.resolve(this.check(req));
  }

  private check(req: Http2ServerRequest): AuthenticationResult {
    const socket = tlsSocketOf(req);
    const chain = socket === undefined ? [] : peerChain(socket);
    if (chain.length === 0) return { kind: 'none' };
    const problem = this.verifier.verify(chain);
    if (problem !== undefined) return { kind: 'invalid', reason: `verifying certificate: ${problem}` };
    const { commonName } = subjectOf(chain[0] as X509Certificate);
    const allowed = this.options.allowedNames;
    if (allowed.length > 0 && !allowed.includes(commonName)) {
      return {
        kind: 'invalid',
        reason: `x509: subject with cn=${commonName} is not in the allowed list`,
      };
    }
    const name = this.options.usernameHeaders
      .flatMap((h) => headerValues(req, h))
      .find((v) => v.trim() !== '');
    if (name === undefined) return { kind: 'none' };
    const groups = this.options.groupHeaders.flatMap((h) => headerValues(req, h));
    const extra: Record<string, string[]> = {};
    for (const prefix of this.options.extraHeaderPrefixes) {
      for (const [suffix, value] of headersWithPrefix(req, prefix)) {
        const key = extraKeyOf(suffix);
        (extra[key] ??= []).push(value);
      }
    }
    return { kind: 'user', user: { name, uid: '', groups, extra } };
  }
}
