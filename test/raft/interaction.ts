// The interaction environment of the datadriven scenario tests: nodes with MemoryStorage, a message queue the
// script delivers by hand, partitions, crashes and restarts. Every handler returns the text it prints.

import type { LogIndex, NodeId } from '../../src/util/brand.js';
import { logIndex, nodeId } from '../../src/util/brand.js';
import { Raft } from '../../src/raft/raft.js';
import type { RaftConfig } from '../../src/raft/raft.js';
import { MemoryStorage, bootstrap } from '../../src/raft/storage.js';
import type { ConfState, Entry, Message, Ready } from '../../src/raft/types.js';
import { decodeConfChange } from '../../src/raft/types.js';
import { describe, simRandom } from './sim.js';

export interface Command {
  readonly name: string;
  /** Positional arguments. */
  readonly args: readonly string[];
  /** key=value arguments. */
  readonly options: ReadonlyMap<string, string>;
}

interface Node {
  readonly id: NodeId;
  readonly storage: MemoryStorage;
  raft: Raft | undefined;
  applied: string[];
  appliedIndex: number;
  confState: ConfState;
  restarts: number;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export class InteractionEnv {
  private readonly nodes = new Map<NodeId, Node>();
  private queue: Message[] = [];
  private readonly cut = new Set<string>();
  private out: string[] = [];
  private options: Partial<RaftConfig> = {};

  handle(cmd: Command): string {
    this.out = [];
    const handler = this.handlers[cmd.name];
    if (handler === undefined) throw new Error(`unknown command ${cmd.name}`);
    handler(cmd);
    return this.out.length === 0 ? 'ok' : this.out.join('\n');
  }

  private print(line: string): void {
    this.out.push(line);
  }

  private node(arg: string | undefined): Node {
    const node = this.nodes.get(nodeId(Number(arg)));
    if (node === undefined) throw new Error(`no node ${arg}`);
    return node;
  }

  private raft(arg: string | undefined): Raft {
    const raft = this.node(arg).raft;
    if (raft === undefined) throw new Error(`node ${arg} is down`);
    return raft;
  }

  private start(node: Node): void {
    node.raft = new Raft({
      id: node.id,
      storage: node.storage,
      random: simRandom(node.id * 7 + node.restarts),
      electionTicks: 10,
      heartbeatTicks: 1,
      ...this.options,
      trace: (line) => this.print(`  ${line}`),
    });
    const snapshot = node.storage.snapshot();
    node.appliedIndex = snapshot.metadata.index;
    node.confState = snapshot.metadata.confState;
  }

  private readonly handlers: Record<string, (cmd: Command) => void> = {
    /** add-nodes N [prevote=false] [checkquorum=false] [max-msg-bytes=B] [snapshot-chunk-bytes=B] [catch-up=N]:
     *  nodes 1..N, bootstrapped as the initial voters. */
    'add-nodes': (cmd) => {
      const n = Number(cmd.args[0]);
      const opt = (k: string): string | undefined => cmd.options.get(k);
      this.options = {
        ...(opt('prevote') !== undefined ? { preVote: opt('prevote') === 'true' } : {}),
        ...(opt('checkquorum') !== undefined ? { checkQuorum: opt('checkquorum') === 'true' } : {}),
        ...(opt('max-msg-bytes') !== undefined
          ? { messageEntriesBytesMax: Number(opt('max-msg-bytes')) }
          : {}),
        ...(opt('snapshot-chunk-bytes') !== undefined
          ? { snapshotChunkBytes: Number(opt('snapshot-chunk-bytes')) }
          : {}),
        ...(opt('catch-up') !== undefined ? { learnerCatchUpEntriesMax: Number(opt('catch-up')) } : {}),
        ...(opt('read-pending') !== undefined ? { readIndexPendingMax: Number(opt('read-pending')) } : {}),
        ...(opt('inflight') !== undefined ? { inflightMessagesMax: Number(opt('inflight')) } : {}),
        ...(opt('uncommitted-bytes') !== undefined
          ? { uncommittedEntriesBytesMax: Number(opt('uncommitted-bytes')) }
          : {}),
      };
      const ids = Array.from({ length: n }, (_, k) => nodeId(k + 1));
      for (const id of ids) {
        const node = this.newNode(id);
        bootstrap(node.storage, ids);
        this.start(node);
      }
      this.out = [];
      for (const id of ids) this.processReady(this.node(String(id)), false);
      this.out = [];
      this.print(`added nodes ${ids.join(',')}`);
    },
    /** add-node ID: a fresh node with empty storage, to be added to the cluster by a membership change. */
    'add-node': (cmd) => {
      const node = this.newNode(nodeId(Number(cmd.args[0])));
      this.start(node);
    },
    campaign: (cmd) => this.raft(cmd.args[0]).campaign(),
    /** propose ID DATA */
    propose: (cmd) => {
      const err = this.raft(cmd.args[0]).propose(encoder.encode(cmd.args[1] ?? ''));
      if (err !== null) this.print(`error: ${err}`);
    },
    /** propose-batch ID DATA... : the entries as one MsgProp */
    'propose-batch': (cmd) => {
      const err = this.raft(cmd.args[0]).proposeBatch(cmd.args.slice(1).map((d) => encoder.encode(d)));
      if (err !== null) this.print(`error: ${err}`);
    },
    /** propose-conf-change ID addVoter|addLearner|removeNode NODE */
    'propose-conf-change': (cmd) => {
      const type = cmd.args[1];
      if (type !== 'addVoter' && type !== 'addLearner' && type !== 'removeNode')
        throw new Error(`bad change ${type}`);
      const err = this.raft(cmd.args[0]).proposeConfChange({ type, nodeId: nodeId(Number(cmd.args[2])) });
      if (err !== null) this.print(`error: ${err}`);
    },
    /** tick ID [N] */
    tick: (cmd) => {
      const raft = this.raft(cmd.args[0]);
      for (let k = 0; k < Number(cmd.args[1] ?? '1'); k++) raft.tick();
    },
    /** tick-all N: N ticks of every live node, one round at a time, without delivering messages. */
    'tick-all': (cmd) => {
      for (let k = 0; k < Number(cmd.args[0] ?? '1'); k++) {
        for (const node of this.nodes.values()) node.raft?.tick();
      }
    },
    /** process-ready [ID...]: persist, queue the messages, apply. */
    'process-ready': (cmd) => {
      for (const id of this.ids(cmd.args)) this.processReady(this.node(String(id)), true);
    },
    /** deliver-msgs [ID...]: delivers every queued message to these nodes (default: all), in order. */
    'deliver-msgs': (cmd) => {
      const to = new Set(this.ids(cmd.args));
      this.deliver((m) => to.has(m.to), cmd.options.get('drop') === 'true');
    },
    /** stabilize: process Ready and deliver messages until nothing is left. */
    stabilize: () => this.stabilize(),
    /** partition A B | C D: cuts both directions between the groups. */
    partition: (cmd) => {
      const bar = cmd.args.indexOf('|');
      const left = cmd.args.slice(0, bar);
      const right = cmd.args.slice(bar + 1);
      for (const a of left)
        for (const b of right) {
          this.cut.add(`${a}>${b}`);
          this.cut.add(`${b}>${a}`);
        }
      this.print(`cut ${left.join(',')} | ${right.join(',')}`);
    },
    /** cut A>B: one-way. */
    cut: (cmd) => {
      for (const link of cmd.args) this.cut.add(link);
    },
    heal: () => this.cut.clear(),
    /** peer-down ID PEER: node ID's transport reports PEER's process gone (connection lost, reconnect refused). */
    'peer-down': (cmd) => this.raft(cmd.args[0]).reportPeerDown(nodeId(Number(cmd.args[1]))),
    crash: (cmd) => {
      const node = this.node(cmd.args[0]);
      node.raft = undefined;
      node.restarts++;
      this.queue = this.queue.filter((m) => m.to !== node.id && m.from !== node.id);
    },
    restart: (cmd) => this.start(this.node(cmd.args[0])),
    status: (cmd) => {
      for (const id of this.ids(cmd.args)) {
        const raft = this.node(String(id)).raft;
        if (raft === undefined) {
          this.print(`${id}: down`);
          continue;
        }
        const s = raft.status();
        const cs = `voters=(${s.confState.voters.join(' ')})${s.confState.learners.length > 0 ? ` learners=(${s.confState.learners.join(' ')})` : ''}`;
        this.print(
          `${id}: ${s.state} term=${s.term} lead=${s.lead} commit=${s.commit} applied=${s.applied} last=${s.lastIndex} ${cs}`,
        );
      }
    },
    /** log ID: the node's stored log. */
    log: (cmd) => {
      const node = this.node(cmd.args[0]);
      const s = node.storage;
      const snap = s.snapshot().metadata;
      if (snap.index > 0) this.print(`snapshot ${snap.index}/${snap.term}`);
      const last = s.lastIndex();
      if (last >= s.firstIndex()) {
        for (const e of s.entries(s.firstIndex(), logIndex(last + 1), Infinity)) this.print(entryLine(e));
      }
      if (this.out.length === 0) this.print('(empty)');
    },
    /** applied ID: what the node's state machine applied since it started. */
    applied: (cmd) => {
      const node = this.node(cmd.args[0]);
      this.print(node.applied.length === 0 ? '(none)' : node.applied.join(' '));
    },
    'transfer-leadership': (cmd) => {
      const err = this.raft(cmd.args[0]).transferLeader(nodeId(Number(cmd.args[1])));
      if (err !== null) this.print(`error: ${err}`);
    },
    'read-index': (cmd) => {
      const err = this.raft(cmd.args[0]).readIndex(cmd.args[1] ?? '');
      if (err !== null) this.print(`error: ${err}`);
    },
    /** snapshot ID: snapshots the state machine at its applied index (padded with DATA bytes if given). */
    snapshot: (cmd) => {
      const node = this.node(cmd.args[0]);
      const data = encoder.encode(
        JSON.stringify({ applied: node.applied, pad: 'x'.repeat(Number(cmd.options.get('pad') ?? '0')) }),
      );
      const made = node.storage.createSnapshot(logIndex(node.appliedIndex), node.confState, data);
      this.print(
        typeof made === 'string'
          ? `error: ${made}`
          : `snapshot ${made.metadata.index}/${made.metadata.term} (${data.length} bytes)`,
      );
    },
    /** compact ID INDEX */
    compact: (cmd) => {
      const err = this.node(cmd.args[0]).storage.compact(logIndex(Number(cmd.args[1])));
      if (err !== null) this.print(`error: ${err}`);
      else this.print(`first index ${this.node(cmd.args[0]).storage.firstIndex()}`);
    },
  };

  private newNode(id: NodeId): Node {
    const node: Node = {
      id,
      storage: new MemoryStorage(),
      raft: undefined,
      applied: [],
      appliedIndex: 0,
      confState: { voters: [], learners: [] },
      restarts: 0,
    };
    this.nodes.set(id, node);
    return node;
  }

  private ids(args: readonly string[]): NodeId[] {
    const given = args.filter((a) => /^\d+$/.test(a)).map((a) => nodeId(Number(a)));
    return given.length > 0 ? given : [...this.nodes.keys()];
  }

  private processReady(node: Node, verbose: boolean): boolean {
    const raft = node.raft;
    if (raft === undefined || !raft.hasReady()) return false;
    const rd = raft.ready();
    if (verbose) this.printReady(node.id, rd);
    else
      for (const rs of rd.readStates)
        this.print(`  ${node.id} readState index=${rs.index} ctx=${rs.context}`);
    if (rd.snapshot !== undefined) {
      node.storage.applySnapshot(rd.snapshot);
      const parsed = JSON.parse(decoder.decode(rd.snapshot.data)) as { applied: string[] };
      node.applied = parsed.applied;
      node.appliedIndex = rd.snapshot.metadata.index;
      node.confState = rd.snapshot.metadata.confState;
    }
    node.storage.append(rd.entries);
    if (rd.hardState !== undefined) node.storage.setHardState(rd.hardState);
    this.queue.push(...rd.messages);
    for (const e of rd.committedEntries) {
      node.appliedIndex = e.index;
      if (e.type === 'confChange') {
        node.confState = raft.applyConfChange(decodeConfChange(e.data));
      } else if (e.data.length > 0) {
        node.applied.push(decoder.decode(e.data));
      }
    }
    raft.advance();
    return true;
  }

  private printReady(id: NodeId, rd: Ready): void {
    this.print(`> ${id} handling Ready`);
    if (rd.softState !== undefined) this.print(`  lead=${rd.softState.lead} state=${rd.softState.state}`);
    if (rd.hardState !== undefined) {
      this.print(
        `  hardState term=${rd.hardState.term} vote=${rd.hardState.vote} commit=${rd.hardState.commit}`,
      );
    }
    if (rd.snapshot !== undefined)
      this.print(
        `  snapshot ${rd.snapshot.metadata.index}/${rd.snapshot.metadata.term} (${rd.snapshot.data.length} bytes)`,
      );
    if (rd.entries.length > 0) this.print(`  entries: ${rd.entries.map(entryLine).join(', ')}`);
    if (rd.committedEntries.length > 0)
      this.print(`  committed: ${rd.committedEntries.map(entryLine).join(', ')}`);
    for (const rs of rd.readStates) this.print(`  readState index=${rs.index} ctx=${rs.context}`);
    for (const m of rd.messages) this.print(`  send ${describe(m)}`);
  }

  private deliver(select: (m: Message) => boolean, drop: boolean): number {
    const now = this.queue.filter(select);
    this.queue = this.queue.filter((m) => !select(m));
    for (const m of now) {
      const to = this.nodes.get(m.to);
      if (drop || to?.raft === undefined || this.cut.has(`${m.from}>${m.to}`)) {
        this.print(`  dropped ${describe(m)}`);
        continue;
      }
      this.print(`  ${describe(m)}`);
      const err = to.raft.step(m);
      if (err !== null) this.print(`  error: ${err}`);
    }
    return now.length;
  }

  private stabilize(): void {
    for (let round = 0; round < 100; round++) {
      let busy = false;
      for (const node of this.nodes.values()) {
        if (this.processReady(node, false)) busy = true;
      }
      if (this.queue.length > 0) {
        busy = true;
        this.deliver(() => true, false);
      }
      if (!busy) return;
    }
    throw new Error('stabilize did not settle in 100 rounds');
  }
}

function entryLine(e: Entry): string {
  const data = decoder.decode(e.data);
  return `${e.index}/${e.term}${e.type === 'confChange' ? ` conf(${data})` : data === '' ? '' : ` ${data}`}`;
}

export type { LogIndex };
