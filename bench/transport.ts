// Peer transport benchmark: two transports in one process over mutual TLS on loopback.
// Run: npm run build && node dist/bench/transport.js
// Measures small-message throughput (Raft-append-sized), large-message throughput (snapshot-chunk-sized) and
// the round-trip latency of one message each way. Every loop is bounded in count and time.

import { createCertificateAuthority, issueCertificate } from '../src/pki/index.js';
import { PeerTransport } from '../src/transport/index.js';
import { nodeId, type NodeId } from '../src/util/brand.js';
import { seededRandom } from '../src/util/clock.js';

interface BenchMessage {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly type: string;
  readonly term: number;
  readonly index: number;
  readonly entries: readonly { readonly term: number; readonly index: number; readonly data: Uint8Array }[];
}

const a = nodeId(1);
const b = nodeId(2);
const deadlineMs = 60_000;

async function main(): Promise<void> {
  const ca = await createCertificateAuthority({ commonName: 'bench-ca' });
  const tlsFor = async (name: string) => {
    const leaf = await issueCertificate(ca, { commonName: name, ipAddresses: ['127.0.0.1'], usage: 'peer' });
    return { certPem: leaf.certPem, keyPem: leaf.keyPem, trustedCaPem: ca.certPem };
  };
  const start = async (id: NodeId) =>
    PeerTransport.create<BenchMessage>({
      clusterId: 'bench',
      nodeId: id,
      tls: await tlsFor(`node-${id}`),
      listen: { host: '127.0.0.1', port: 0 },
      random: seededRandom(id),
    });
  const ta = await start(a);
  const tb = await start(b);
  try {
    ta.addPeer(b, `https://127.0.0.1:${tb.address?.port}`);
    tb.addPeer(a, `https://127.0.0.1:${ta.address?.port}`);
    let receivedB = 0;
    let receivedA = 0;
    tb.onMessage((m) => {
      receivedB += 1;
      if (m.type === 'ping') tb.send([{ ...m, from: b, to: a, type: 'pong' }]);
    });
    ta.onMessage(() => (receivedA += 1));
    const message = (bytes: number, index: number, type = 'app'): BenchMessage => ({
      from: a,
      to: b,
      type,
      term: 3,
      index,
      entries: [{ term: 3, index, data: new Uint8Array(bytes) }],
    });
    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    const startedMs = performance.now();
    const overDeadline = (): boolean => performance.now() - startedMs > deadlineMs;

    // Warm up: the connection is established before anything is timed.
    ta.send([message(16, 0)]);
    while (receivedB < 1 && !overDeadline()) await turn();

    const throughput = async (
      label: string,
      count: number,
      bytes: number,
      perTurn: number,
      queueMax: number,
    ) => {
      const before = receivedB;
      const dropsBefore = ta.stats().peers.get(b)?.messagesDropped ?? 0;
      const t0 = performance.now();
      let sent = 0;
      while (receivedB - before < count && !overDeadline()) {
        const queued = ta.stats().peers.get(b)?.queueMessages ?? 0;
        if (sent < count && queued < queueMax) {
          const n = Math.min(perTurn, count - sent);
          ta.send(Array.from({ length: n }, (_, i) => message(bytes, sent + i)));
          sent += n;
        }
        await turn();
      }
      const seconds = (performance.now() - t0) / 1000;
      const got = receivedB - before;
      const dropped = (ta.stats().peers.get(b)?.messagesDropped ?? 0) - dropsBefore;
      console.log(
        `${label}: ${got} messages of ${bytes} B payload in ${seconds.toFixed(2)} s = ` +
          `${Math.round(got / seconds)} msg/s, ${((got * bytes) / seconds / 1024 / 1024).toFixed(1)} MiB/s payload` +
          (dropped > 0 ? `, ${dropped} dropped` : ''),
      );
    };
    await throughput('small (256 B entries)', 200_000, 256, 256, 2048);
    await throughput('medium (8 KiB entries)', 20_000, 8 * 1024, 64, 512);
    await throughput('large (1 MiB snapshot chunks)', 200, 1024 * 1024, 4, 8);

    const rtts: number[] = [];
    for (let i = 0; i < 2000 && !overDeadline(); i++) {
      const before = receivedA;
      const t0 = performance.now();
      ta.send([message(64, i, 'ping')]);
      while (receivedA === before && !overDeadline()) await turn();
      rtts.push((performance.now() - t0) * 1000);
    }
    rtts.sort((x, y) => x - y);
    const pct = (p: number): number => rtts[Math.min(rtts.length - 1, Math.floor(p * rtts.length))] ?? NaN;
    console.log(
      `round trip (1 message each way): median ${pct(0.5).toFixed(0)} µs, p99 ${pct(0.99).toFixed(0)} µs over ${rtts.length}`,
    );
  } finally {
    await Promise.all([ta.close(), tb.close()]);
  }
}

await main();
