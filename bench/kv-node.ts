// Bench-only Stoa node: one process that opens a ReplicatedStore (a member of a Raft group over mutual-TLS peer
// links) and serves the KV RPC of bench/kv-protocol.ts on a loopback port, so that the cluster bench compares
// Stoa and etcd processes at the store level. Usage: node dist/bench/kv-node.js CONFIG.json; prints "ready"
// once it listens. SIGTERM closes it cleanly; the bench kills it with SIGKILL to measure failover.
import { createServer, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { ReplicatedStore, type ReplicaOptions } from '../src/replica/engine.js';
import type { Watch, WatchResponse } from '../src/storage/contract.js';
import { FrameDecoder } from '../src/transport/framing.js';
import { latencyTraceOn, traceStage } from '../src/transport/latency-trace.js';
import {
  CorkedWriter,
  decodePayload,
  frameBytesMax,
  toWireError,
  type Reply,
  type Request,
} from './kv-protocol.js';

export interface KvNodeConfig {
  readonly replica: Omit<ReplicaOptions, 'logger' | 'random' | 'onFatal'>;
  readonly clientPort: number;
}

const configPath = process.argv[2];
if (configPath === undefined) {
  process.stderr.write('usage: kv-node CONFIG.json\n');
  process.exit(2);
}
const config = JSON.parse(await readFile(configPath, 'utf8')) as KvNodeConfig;
const store = await ReplicatedStore.open({
  ...config.replica,
  onFatal: (error) => {
    process.stderr.write(`fatal: ${String(error)}\n`);
    process.exit(1);
  },
});

function serve(socket: Socket): void {
  socket.setNoDelay(true);
  const writer = new CorkedWriter(socket);
  const decoder = new FrameDecoder(frameBytesMax);
  const watches = new Map<number, Watch>();
  const reply = (message: Reply): void => writer.send(message);
  const answer = (id: number, work: Promise<unknown>): void => {
    work.then(
      (result) => {
        if (latencyTraceOn) traceStage('kv.reply', id);
        reply([id, 0, result ?? null]);
      },
      (error: unknown) => reply([id, 1, toWireError(error)]),
    );
  };
  const handle = ([id, method, argument]: Request): void => {
    switch (method) {
      case 'range': {
        const { span, options } = argument as { span: never; options: never };
        answer(id, store.range(span, options));
        return;
      }
      case 'txn':
        if (latencyTraceOn) traceStage('kv.txn', id);
        answer(id, store.txn(argument as never));
        return;
      case 'compact':
        answer(id, store.compact(argument as never));
        return;
      case 'status':
        answer(id, store.status());
        return;
      case 'replica': {
        const s = store.replicaStatus();
        reply([
          id,
          0,
          {
            role: s.role,
            leader: s.leader,
            term: s.term,
            commitIndex: s.commitIndex,
            appliedIndex: s.appliedIndex,
            leaderDownHints: s.leaderDownHints,
          },
        ]);
        return;
      }
      case 'watch': {
        const { span, options } = argument as { span: never; options: never };
        try {
          const watch = store.watch(span, options, (response: WatchResponse) => {
            if (response.type === 'canceled') {
              watches.delete(id);
              reply([id, 2, { type: 'canceled', error: toWireError(response.error) }]);
            } else {
              if (latencyTraceOn && response.type === 'events') {
                traceStage('kv.watch', response.events.at(-1)?.kv.modRevision ?? 0);
              }
              reply([id, 2, response]);
            }
          });
          watches.set(id, watch);
          answer(id, watch.ready);
        } catch (error) {
          reply([id, 1, toWireError(error)]);
        }
        return;
      }
      case 'unwatch':
        watches.get(argument as number)?.close();
        watches.delete(argument as number);
        return;
      case 'progress':
        watches.get(argument as number)?.requestProgress();
        return;
      default:
        reply([id, 1, { code: 'InvalidArgument', message: `unknown method ${String(method)}` }]);
    }
  };
  socket.on('data', (chunk: Buffer) => {
    const broken = decoder.push(chunk, (payload) => handle(decodePayload(payload) as Request));
    if (broken !== undefined) socket.destroy();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    for (const watch of watches.values()) watch.close();
    watches.clear();
  });
}

const server = createServer(serve);
await new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  server.listen(config.clientPort, '127.0.0.1', resolve);
});
process.stdout.write('ready\n');

process.once('SIGTERM', () => {
  server.close();
  void store.close().then(() => process.exit(0));
});
