// The chaos workload's HTTPS client: one JSON request with a deadline. It never throws: a reply is a status and
// a body; a timeout, a refused or dropped connection is status 0 (the outcome of a write is then unknown).

import { Agent, request } from 'node:https';
import type { Tls } from './cluster.js';

export interface Reply {
  /** 0 when no reply came (timeout, refused, reset). */
  readonly status: number;
  readonly body: unknown;
  readonly error?: string;
  /** True when the connection was refused: the request never reached a server, so it had no effect. */
  readonly refused?: boolean;
}

export class ApiClient {
  private readonly agent: Agent;

  constructor(
    private readonly tls: Tls,
    private readonly timeoutMs: number,
  ) {
    // Keep-alive saves a TLS handshake per request (the machine is small); few sockets per client.
    this.agent = new Agent({ keepAlive: true, maxSockets: 4, ca: tls.ca, cert: tls.cert, key: tls.key });
  }

  send(url: string, method: string, body?: unknown): Promise<Reply> {
    return new Promise((resolve) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      let settled = false;
      const finish = (reply: Reply): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(reply);
      };
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          ca: this.tls.ca,
          cert: this.tls.cert,
          key: this.tls.key,
          headers: {
            accept: 'application/json',
            // An explicit length: Node sends a DELETE body with neither a length nor chunking otherwise, and
            // the server then reads the body as the next request on the connection.
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
            finish({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', (error) => finish({ status: 0, body: undefined, error: error.message }));
        },
      );
      // A whole-request deadline (a paused node accepts the connection and never answers).
      const timer = setTimeout(() => {
        req.destroy(new Error(`timeout after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) =>
        finish({
          status: 0,
          body: undefined,
          error: error.message,
          ...(error.code === 'ECONNREFUSED' ? { refused: true } : {}),
        }),
      );
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
