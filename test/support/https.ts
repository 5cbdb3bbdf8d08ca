// A small HTTPS client for tests: JSON requests to a Stoa node with the admin client certificate.
import { request } from 'node:https';

export interface Tls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export function httpsJson(
  url: string,
  tls: Tls,
  method = 'GET',
  body?: unknown,
  timeoutMs = 10_000,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON replies by path
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      url,
      {
        method,
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        timeout: timeoutMs,
        headers: {
          accept: 'application/json',
          // An explicit length: for a DELETE, Node sends a body with neither a length nor chunking otherwise.
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${url}`)));
    req.on('error', reject);
    req.end(payload);
  });
}
