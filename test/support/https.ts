// A small HTTPS client for tests: JSON requests to a Stoa node with the admin client certificate.
import { httpsRequest, parseBody } from '../../src/server/admin-client.js';

export interface Tls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export async function httpsJson(
  url: string,
  tls: Tls,
  method = 'GET',
  body?: unknown,
  timeoutMs = 10_000,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON replies by path
): Promise<{ status: number; body: any }> {
  const reply = await httpsRequest(
    url,
    { ...tls, token: undefined },
    {
      method,
      timeoutMs,
      ...(body !== undefined ? { json: body } : {}),
    },
  );
  return { status: reply.status, body: parseBody(reply.body) };
}
