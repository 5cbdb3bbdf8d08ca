// First-start certificates in <data-dir>/pki (a CA, a serving certificate, an admin client certificate in
// group system:masters) and <data-dir>/admin.kubeconfig; or the user's own files given by flags.

import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  createCertificateAuthority,
  issueCertificate,
  loadOrCreate,
  type CertificateAndKey,
} from '../pki/index.js';
import type { ServeOptions } from './flags.js';

export interface ServingCredentials {
  readonly servingCertPem: string;
  readonly servingKeyPem: string;
  /** CAs whose client certificates authenticate. */
  readonly clientCaPem: string;
  /** The generated CA (absent when the user brought every file). */
  readonly generatedCa?: CertificateAndKey;
  readonly admin?: CertificateAndKey;
}

export async function prepareCredentials(options: ServeOptions): Promise<ServingCredentials> {
  const pkiDir = join(options.dataDir, 'pki');
  const ca = await loadOrCreate(pkiDir, 'ca', () => createCertificateAuthority({ commonName: 'stoa-ca' }));
  const ipAddresses = [
    '127.0.0.1',
    ...(options.advertiseAddress === undefined ? [] : [options.advertiseAddress]),
  ];
  if (
    options.bindAddress !== '0.0.0.0' &&
    options.bindAddress !== '127.0.0.1' &&
    !ipAddresses.includes(options.bindAddress)
  ) {
    ipAddresses.push(options.bindAddress);
  }
  const serving =
    options.tlsCertFile !== undefined && options.tlsPrivateKeyFile !== undefined
      ? {
          certPem: await readFile(options.tlsCertFile, 'utf8'),
          keyPem: await readFile(options.tlsPrivateKeyFile, 'utf8'),
        }
      : await loadOrCreate(pkiDir, 'apiserver', () =>
          issueCertificate(ca, {
            commonName: 'stoa-apiserver',
            dnsNames: ['localhost', hostname(), 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
            ipAddresses,
            usage: 'server',
          }),
        );
  const admin = await loadOrCreate(pkiDir, 'admin', () =>
    issueCertificate(ca, { commonName: 'admin', organizations: ['system:masters'], usage: 'client' }),
  );
  const userCa = options.clientCaFile === undefined ? '' : await readFile(options.clientCaFile, 'utf8');
  return {
    servingCertPem: serving.certPem,
    servingKeyPem: serving.keyPem,
    clientCaPem: userCa === '' ? ca.certPem : `${userCa.trim()}\n${ca.certPem}`,
    generatedCa: ca,
    admin,
  };
}

/** A kubeconfig for `admin` with the CA and the client certificate embedded. */
export function adminKubeconfig(serverUrl: string, caPem: string, admin: CertificateAndKey): string {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'stoa', cluster: { server: serverUrl, 'certificate-authority-data': b64(caPem) } }],
    users: [
      {
        name: 'admin',
        user: { 'client-certificate-data': b64(admin.certPem), 'client-key-data': b64(admin.keyPem) },
      },
    ],
    contexts: [{ name: 'admin@stoa', context: { cluster: 'stoa', user: 'admin' } }],
    'current-context': 'admin@stoa',
    preferences: {},
  });
}

export async function writeAdminKubeconfig(
  dataDir: string,
  serverUrl: string,
  credentials: ServingCredentials,
): Promise<string | undefined> {
  if (credentials.generatedCa === undefined || credentials.admin === undefined) return undefined;
  const path = join(dataDir, 'admin.kubeconfig');
  await writeFile(path, adminKubeconfig(serverUrl, credentials.generatedCa.certPem, credentials.admin), {
    mode: 0o600,
  });
  return path;
}
