// Proves issued certificates work in real TLS: a server cert with SANs verifies, a client cert's CN and O are
// read back, a certificate from another CA is refused, and loadOrCreate reuses what it wrote.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import {
  certificateSubject,
  createCertificateAuthority,
  issueCertificate,
  loadOrCreate,
} from '../../src/pki/index.js';

test('a client certificate authenticates over mutual TLS and a foreign one is refused', async (t) => {
  const ca = await createCertificateAuthority({ commonName: 'stoa-test-ca' });
  const otherCa = await createCertificateAuthority({ commonName: 'other-ca' });
  const serving = await issueCertificate(ca, {
    commonName: 'stoa-server',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const admin = await issueCertificate(ca, {
    commonName: 'admin',
    organizations: ['system:masters', 'team, with comma'],
    usage: 'client',
  });
  const stranger = await issueCertificate(otherCa, { commonName: 'mallory', usage: 'client' });

  const seen: { commonName: string; organizations: string[] }[] = [];
  const server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (socket: TLSSocket) => {
      seen.push(certificateSubject(socket.getPeerCertificate().raw));
      socket.end('hello');
    },
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;

  const talk = (client: { certPem: string; keyPem: string }, host: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({
        host,
        port,
        ca: ca.certPem,
        cert: client.certPem,
        key: client.keyPem,
        servername: host,
      });
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });

  assert.equal(await talk(admin, 'localhost'), 'hello');
  assert.deepEqual(seen, [{ commonName: 'admin', organizations: ['system:masters', 'team, with comma'] }]);
  // Under TLS 1.3 the client's handshake completes before the server checks its certificate, so the refusal
  // arrives as an alert (an error) or a closed connection: either way, no reply.
  const strangerReply = await talk(stranger, 'localhost').catch((error: Error) => error.message);
  assert.notEqual(strangerReply, 'hello');
  assert.equal(seen.length, 1, 'the foreign certificate must not reach the handler');
});

test('the server certificate does not verify for a name outside its SANs', async () => {
  const ca = await createCertificateAuthority({ commonName: 'stoa-test-ca' });
  const serving = await issueCertificate(ca, {
    commonName: 'stoa-server',
    dnsNames: ['localhost'],
    usage: 'server',
  });
  const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (socket) => socket.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    await assert.rejects(
      new Promise((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem, servername: 'example.com' });
        socket.on('secureConnect', resolve);
        socket.on('error', reject);
      }),
      /altnames|Hostname/,
    );
  } finally {
    server.close();
  }
});

test('loadOrCreate writes once with a private key mode and reuses the pair', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'stoa-pki-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  let issued = 0;
  const issue = async () => {
    issued++;
    return createCertificateAuthority({ commonName: 'ca' });
  };
  const first = await loadOrCreate(dir, 'ca', issue);
  const second = await loadOrCreate(dir, 'ca', issue);
  assert.equal(issued, 1);
  assert.deepEqual(second, first);
  assert.equal((await stat(join(dir, 'ca.key'))).mode & 0o777, 0o600);
  assert.equal(await readFile(join(dir, 'ca.crt'), 'utf8'), first.certPem);

  await writeFile(join(dir, 'half.crt'), first.certPem);
  await assert.rejects(loadOrCreate(dir, 'half', issue), /only one of/);
});
