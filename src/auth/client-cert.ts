// Client certificates (--client-ca-file, one or more CAs in the bundle): a certificate that chains to one of the
// CAs authenticates its subject's CN as the user and each O as a group. The TLS layer only asks for a certificate
// (it trusts the union of every CA the server knows); each authenticator verifies against its own CAs, so a
// request-header proxy's CA never authenticates users and the reverse.

import { X509Certificate } from 'node:crypto';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { AuthenticationResult, Authenticator, UserInfo } from './user.js';

const chainLengthMax = 8;
const clientAuthOid = '1.3.6.1.5.5.7.3.2';
const anyUsageOid = '2.5.29.37.0';

/** Every certificate of a PEM bundle; an error names the source when there is none or one is broken. */
export function parseCertificateBundle(pem: string, source: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${source}: no PEM certificate found`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new Error(`${source}: certificate ${i + 1} is not valid: ${(error as Error).message}`);
    }
  });
}

/** The TLS socket under a request (HTTP/2 requests reach it through their session). */
export function tlsSocketOf(req: Http2ServerRequest): TLSSocket | undefined {
  const http2Socket = (req as unknown as { stream?: { session?: { socket?: TLSSocket } } }).stream?.session
    ?.socket;
  const socket = http2Socket ?? (req.socket as TLSSocket | undefined);
  return socket !== undefined && typeof socket.getPeerX509Certificate === 'function' ? socket : undefined;
}

/** The presented chain, leaf first (what the client sent plus what TLS could link). */
export function peerChain(socket: TLSSocket): X509Certificate[] {
  const leaf = socket.getPeerX509Certificate();
  if (leaf === undefined) return [];
  const chain = [leaf];
  let current = leaf;
  for (let i = 0; i < chainLengthMax; i++) {
    const issuer = current.issuerCertificate;
    if (issuer === undefined || issuer.fingerprint256 === current.fingerprint256) break;
    chain.push(issuer);
    current = issuer;
  }
  return chain;
}

function validAt(cert: X509Certificate, nowMs: number): boolean {
  return Date.parse(cert.validFrom) <= nowMs && nowMs <= Date.parse(cert.validTo);
}

function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** Verifies a presented chain against a fixed set of CAs (x509.Verify with ExtKeyUsageClientAuth). */
export class CertificateVerifier {
  constructor(private readonly roots: readonly X509Certificate[]) {}

  /** Why the chain does not verify, or undefined when it does. */
  verify(chain: readonly X509Certificate[], nowMs: number = Date.now()): string | undefined {
    const leaf = chain[0];
    if (leaf === undefined) return 'no certificate';
    if (!validAt(leaf, nowMs)) return 'x509: certificate has expired or is not yet valid';
    const usages = leaf.keyUsage;
    if (usages !== undefined && !usages.includes(clientAuthOid) && !usages.includes(anyUsageOid))
      return 'x509: certificate specifies an incompatible key usage';
    let current = leaf;
    for (let depth = 0; depth < chainLengthMax; depth++) {
      const root = this.roots.find((r) => validAt(r, nowMs) && issuedBy(current, r));
      if (root !== undefined) return undefined;
      const intermediate = chain.find(
        (c) => c !== current && c.ca && validAt(c, nowMs) && issuedBy(current, c),
      );
      if (intermediate === undefined) break;
      current = intermediate;
    }
    return 'x509: certificate signed by unknown authority';
  }
}

/** Subject fields of a certificate: `CN=alice, O=dev` (multi-line in Node's form). */
export function subjectOf(cert: X509Certificate): { commonName: string; organizations: string[] } {
  const organizations: string[] = [];
  let commonName = '';
  for (const line of cert.subject.split('\n')) {
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (key === 'CN') commonName = value;
    else if (key === 'O') organizations.push(value);
  }
  return { commonName, organizations };
}

/** Caches a per-connection result: one TLS connection carries one certificate. */
export class PerConnection<T> {
  private readonly bySocket = new WeakMap<object, T>();
  get(socket: object, compute: () => T): T {
    const cached = this.bySocket.get(socket);
    if (cached !== undefined) return cached;
    const value = compute();
    this.bySocket.set(socket, value);
    return value;
  }
}

export class ClientCertificateAuthenticator implements Authenticator {
  readonly name = 'client-certificate';
  private readonly verifier: CertificateVerifier;
  private readonly cache = new PerConnection<AuthenticationResult>();

  constructor(roots: readonly X509Certificate[]) {
    this.verifier = new CertificateVerifier(roots);
  }

  authenticate(req: Http2ServerRequest): Promise<AuthenticationResult> {
    const socket = tlsSocketOf(req);
    if (socket === undefined) return Promise.resolve({ kind: 'none' });
    return Promise.resolve(this.cache.get(socket, () => this.fromSocket(socket)));
  }

  private fromSocket(socket: TLSSocket): AuthenticationResult {
    const chain = peerChain(socket);
    if (chain.length === 0) return { kind: 'none' };
    const problem = this.verifier.verify(chain);
    if (problem !== undefined) return { kind: 'invalid', reason: `verifying certificate: ${problem}` };
    const { commonName, organizations } = subjectOf(chain[0] as X509Certificate);
    if (commonName === '') return { kind: 'invalid', reason: 'certificate has no common name' };
    const user: UserInfo = { name: commonName, uid: '', groups: organizations, extra: {} };
    return { kind: 'user', user };
  }
}
