// Authentication cost per request, per method, measured in process on the authenticators the server uses: a
// static token, a client certificate (verified as on a new connection), a service account JWT (ES256, with the
// account looked up) and an OIDC ID token (RS256, keys fetched once from a small HTTPS issuer). Bounded in
// count and time.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:https';
import { exportJWK, SignJWT } from 'jose';
import { CertificateVerifier, parseCertificateBundle, subjectOf } from '../src/auth/client-cert.js';
import { JwtAuthenticator } from '../src/auth/oidc.js';
import {
  ServiceAccountTokens,
  signingKeyFromPem,
  verifyingKeysFromPem,
} from '../src/auth/service-account.js';
import { parseTokenFile, TokenFileAuthenticator } from '../src/auth/token-file.js';
import { createCertificateAuthority, issueCertificate } from '../src/pki/index.js';
import { X509Certificate } from 'node:crypto';

export interface AuthnRow {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
}

/** Microseconds per call of `op`, over at most `count` calls or `durationMs`. */
async function costUs(count: number, durationMs: number, op: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await op();
  let done = 0;
  const start = performance.now();
  const end = start + durationMs;
  while (done < count && performance.now() < end) {
    await op();
    done++;
  }
  return ((performance.now() - start) * 1000) / Math.max(1, done);
}

export async function authenticationRows(quick: boolean): Promise<AuthnRow[]> {
  const count = quick ? 2000 : 20_000;
  const durationMs = quick ? 500 : 3000;
  const rows: AuthnRow[] = [];
  const expect = (ok: boolean, what: string): void => {
    if (!ok) throw new Error(`authentication bench: ${what} did not authenticate`);
  };

  const lines = Array.from({ length: 1000 }, (_, i) => `token-${i},user-${i},${i},"g1,g2"`).join('\n');
  const tokens = new TokenFileAuthenticator(parseTokenFile(lines));
  rows.push({
    name: 'authentication: static token (1000 in the file)',
    value: await costUs(count, durationMs, async () =>
      expect((await tokens.authenticateToken('token-500')).kind === 'user', 'token'),
    ),
    unit: 'us',
  });

  const ca = await createCertificateAuthority({ commonName: 'bench-ca' });
  const leaf = await issueCertificate(ca, { commonName: 'alice', organizations: ['dev'], usage: 'client' });
  const verifier = new CertificateVerifier(parseCertificateBundle(ca.certPem, 'bench'));
  const chain = [new X509Certificate(leaf.certPem)];
  rows.push({
    name: 'authentication: client certificate (per new connection)',
    value: await costUs(count, durationMs, () => {
      expect(
        verifier.verify(chain) === undefined && subjectOf(chain[0] as X509Certificate).commonName === 'alice',
        'certificate',
      );
      return Promise.resolve();
    }),
    unit: 'us',
  });

  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const sa = new ServiceAccountTokens(
    signingKeyFromPem(ec.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 'bench'),
    verifyingKeysFromPem(ec.publicKey.export({ type: 'spki', format: 'pem' }) as string, 'bench'),
    { issuers: ['https://bench'], apiAudiences: [], lookup: true, domainPrefix: 'svc.io', nowMs: Date.now },
    { get: () => Promise.resolve({ metadata: { name: 'robot', namespace: 'default', uid: 'u1' } }) },
  );
  const saToken = (
    await sa.issue({ namespace: 'default', name: 'robot', uid: 'u1' }, ['https://bench'], 3600)
  ).token;
  rows.push({
    name: 'authentication: service account JWT (ES256, lookup)',
    value: await costUs(count, durationMs, async () =>
      expect((await sa.authenticateToken(saToken)).kind === 'user', 'service account'),
    ),
    unit: 'us',
  });

  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serving = await issueCertificate(ca, {
    commonName: 'localhost',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  let url = '';
  const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const issuer = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url === '/keys' ? { keys: [jwk] } : { issuer: url, jwks_uri: `${url}/keys` }));
  });
  await new Promise<void>((resolve) => issuer.listen(0, '127.0.0.1', resolve));
  try {
    const address = issuer.address();
    url = `https://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    const oidc = new JwtAuthenticator({
      url,
      caPem: ca.certPem,
      audiences: ['stoa'],
      signingAlgs: ['RS256'],
      claimValidation: [],
      username: { claim: 'sub', prefix: 'oidc:' },
      usernameIsEmail: false,
      groups: { claim: 'groups', prefix: '' },
      extra: [],
      userValidation: [],
    });
    const now = Math.floor(Date.now() / 1000);
    const idToken = await new SignJWT({ sub: 'jane', groups: ['dev'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(url)
      .setAudience('stoa')
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(rsa.privateKey);
    rows.push({
      name: 'authentication: OIDC ID token (RS256)',
      value: await costUs(count, durationMs, async () =>
        expect((await oidc.authenticateToken(idToken)).kind === 'user', 'OIDC'),
      ),
      unit: 'us',
    });
  } finally {
    issuer.closeAllConnections();
    await new Promise<void>((resolve) => issuer.close(() => resolve()));
  }
  return rows;
}
