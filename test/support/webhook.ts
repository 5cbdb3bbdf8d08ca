// A webhook over mutual TLS for tests of the TokenReview and SubjectAccessReview webhooks: its own CA, a serving
// certificate for 127.0.0.1, a client certificate for the API server, and a handler from the posted JSON review
// (and the request, to see the client's certificate) to the JSON answer.
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import { createCertificateAuthority, issueCertificate, type CertificateAndKey } from '../../src/pki/index.js';

export interface TestWebhook {
  readonly server: Server;
  readonly port: number;
  readonly ca: CertificateAndKey;
  /** The client certificate the API server presents (CN as asked). */
  readonly client: CertificateAndKey;
  /** Stops listening and cuts open connections (safe to call twice). */
  close(): Promise<void>;
}

export async function startWebhook(
  clientCommonName: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- reviews are read loosely in tests
  answer: (review: any, req: IncomingMessage) => unknown,
): Promise<TestWebhook> {
  const ca = await createCertificateAuthority({ commonName: 'webhook-ca' });
  const serving = await issueCertificate(ca, {
    commonName: 'localhost',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const client = await issueCertificate(ca, { commonName: clientCommonName, usage: 'client' });
  const server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const reply = answer(JSON.parse(Buffer.concat(chunks).toString('utf8')), req);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(reply));
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    server,
    port,
    ca,
    client,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
