// Test support: a small OpenID Connect issuer over real HTTPS on a free loopback port: discovery document, JWKS,
// and ID tokens signed with jose. Its signing key can be rotated.

import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { exportJWK, SignJWT, type JWTPayload } from 'jose';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.js';

export interface TestIssuer {
  readonly url: string;
  readonly caPem: string;
  /** Requests served, by path. */
  readonly hits: Map<string, number>;
  sign(
    claims: JWTPayload,
    options?: { expiresInSeconds?: number; audience?: string; issuer?: string },
  ): Promise<string>;
  /** A new signing key; the JWKS then publishes only the new one. */
  rotate(): void;
  close(): Promise<void>;
}

export async function startIssuer(): Promise<TestIssuer> {
  const ca = await createCertificateAuthority({ commonName: 'issuer-ca' });
  const cert = await issueCertificate(ca, {
    commonName: 'localhost',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  let key: { privateKey: KeyObject; publicKey: KeyObject; kid: string } = newKey(1);
  let generation = 1;
  const hits = new Map<string, number>();
  let url = '';
  const server: Server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    const path = req.url ?? '';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const send = (body: unknown): void => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(body));
    };
    if (path === '/.well-known/openid-configuration') {
      send({ issuer: url, jwks_uri: `${url}/keys`, id_token_signing_alg_values_supported: ['RS256'] });
    } else if (path === '/keys') {
      exportJWK(key.publicKey).then(
        (jwk) => send({ keys: [{ ...jwk, kid: key.kid, alg: 'RS256', use: 'sig' }] }),
        () => res.end(),
      );
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  url = `https://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return {
    url,
    caPem: ca.certPem,
    hits,
    sign: (claims, options = {}) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: key.kid })
        .setIssuer(options.issuer ?? url)
        .setAudience(options.audience ?? 'stoa')
        .setIssuedAt(now)
        .setExpirationTime(now + (options.expiresInSeconds ?? 600))
        .sign(key.privateKey);
    },
    rotate: () => {
      generation++;
      key = newKey(generation);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function newKey(generation: number): { privateKey: KeyObject; publicKey: KeyObject; kid: string } {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...pair, kid: `key-${generation}` };
}
