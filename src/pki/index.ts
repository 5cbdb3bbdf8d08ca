// Certificates for the API server and the peer links: a CA, leaf certificates issued by it, and the subject of
// a presented certificate. ECDSA P-256 keys (fast to generate, accepted by kubectl and Node's TLS), PKCS#8 PEM.

import 'reflect-metadata'; // @peculiar/x509 depends on tsyringe, which needs the Reflect metadata polyfill.
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

type CryptoKey = webcrypto.CryptoKey;
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export interface CertificateAndKey {
  readonly certPem: string;
  /** PKCS#8 PEM ("BEGIN PRIVATE KEY"). */
  readonly keyPem: string;
}

export interface CertificateAuthorityOptions {
  readonly commonName: string;
  readonly validityDays?: number;
}

export type CertificateUsage = 'server' | 'client' | 'peer';

export interface LeafOptions {
  readonly commonName: string;
  readonly organizations?: readonly string[];
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** server: serverAuth; client: clientAuth; peer: both (Raft peers dial and accept). */
  readonly usage: CertificateUsage;
  readonly validityDays?: number;
}

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const caValidityDaysDefault = 3650;
const leafValidityDaysDefault = 365;
const dayMs = 24 * 60 * 60 * 1000;
/** Backdate notBefore a little so that peers with slightly skewed clocks accept a fresh certificate. */
const clockSkewMs = 5 * 60 * 1000;

/** A positive 128-bit serial number in hex (RFC 5280 asks for at most 20 octets, positive). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

/** An X.500 name with commas and other special characters escaped (RFC 4514). */
function distinguishedName(commonName: string, organizations: readonly string[] = []): string {
  const escape = (value: string): string => value.replace(/([,+"\\<>;=#])/g, '\\$1');
  return [...organizations.map((o) => `O=${escape(o)}`), `CN=${escape(commonName)}`].join(', ');
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
}

async function importKeyPem(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0];
  if (der === undefined) throw new Error('no PEM block in the private key');
  return webcrypto.subtle.importKey('pkcs8', der, algorithm, true, ['sign']);
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - clockSkewMs), notAfter: new Date(now + days * dayMs) };
}

export async function createCertificateAuthority(
  options: CertificateAuthorityOptions,
): Promise<CertificateAndKey> {
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: distinguishedName(options.commonName),
    ...validity(options.validityDays ?? caValidityDaysDefault),
    signingAlgorithm: algorithm,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: certificate.toString('pem'), keyPem: await exportKeyPem(keys.privateKey) };
}

export async function issueCertificate(
  ca: CertificateAndKey,
  options: LeafOptions,
): Promise<CertificateAndKey> {
  const caCertificate = new x509.X509Certificate(ca.certPem);
  const caKey = await importKeyPem(ca.keyPem);
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const extendedUsages: string[] = [];
  if (options.usage === 'server' || options.usage === 'peer')
    extendedUsages.push(x509.ExtendedKeyUsage.serverAuth);
  if (options.usage === 'client' || options.usage === 'peer')
    extendedUsages.push(x509.ExtendedKeyUsage.clientAuth);
  const alternativeNames = [
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(extendedUsages, false),
    await x509.AuthorityKeyIdentifierExtension.create(caCertificate, false),
  ];
  if (alternativeNames.length > 0)
    extensions.push(new x509.SubjectAlternativeNameExtension(alternativeNames));
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: distinguishedName(options.commonName, options.organizations),
    issuer: caCertificate.subject,
    ...validity(options.validityDays ?? leafValidityDaysDefault),
    signingAlgorithm: algorithm,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions,
  });
  return { certPem: certificate.toString('pem'), keyPem: await exportKeyPem(keys.privateKey) };
}

/** The subject of a certificate as authentication reads it: CN is the user name, each O a group. */
export function certificateSubject(cert: string | Uint8Array): {
  commonName: string;
  organizations: string[];
} {
  const parsed = new x509.X509Certificate(typeof cert === 'string' ? cert : Buffer.from(cert));
  const name = parsed.subjectName;
  return { commonName: name.getField('CN')[0] ?? '', organizations: name.getField('O') };
}

/**
 * Loads `<dir>/<name>.crt` and `<dir>/<name>.key` if both exist; otherwise issues a pair with `issue` and writes
 * it (the key with mode 0600). A half-present pair is an error rather than silently replaced.
 */
export async function loadOrCreate(
  dir: string,
  name: string,
  issue: () => Promise<CertificateAndKey>,
): Promise<CertificateAndKey> {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  const [certPem, keyPem] = await Promise.all([readIfExists(certPath), readIfExists(keyPath)]);
  if (certPem !== undefined && keyPem !== undefined) return { certPem, keyPem };
  if (certPem !== undefined || keyPem !== undefined) {
    throw new Error(`only one of ${certPath} and ${keyPath} exists; remove it or supply the other`);
  }
  const pair = await issue();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(keyPath, pair.keyPem, { mode: 0o600, flag: 'wx' });
  await writeFile(certPath, pair.certPem, { mode: 0o644, flag: 'wx' });
  return pair;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
