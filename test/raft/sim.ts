// A deterministic simulator of a Raft cluster: N cores on a seeded network that drops, duplicates, delays and
// reorders messages, partitions (symmetric and one-way) and heals, crashes and restarts nodes (a restarted node
// keeps only what its driver persisted), skews ticks, changes membership and transfers leadership. A small
// key-value state machine with snapshots runs on top. Safety is checked after every step; liveness after heal.

import type { LogIndex, NodeId, Term } from '../../src/util/brand.js';
import { logIndex, nodeId } from '../../src/util/brand.js';
import type { Random } from '../../src/util/clock.js';
import { Raft } from '../../src/raft/raft.js';
import { MemoryStorage, bootstrap } from '../../src/raft/storage.js';
import type { ConfChange, ConfState, Entry, Message, Ready } from '../../src/raft/types.js';
import { decodeConfChange } from '../../src/raft/types.js';

export interface SimOptions {
  readonly seed: number;
  readonly nodes: number;
  /** Rounds of faults and load before the final heal (one round = one tick of every node, plus deliveries). */
  readonly rounds: number;
  /** Add learners, promote them, remove voters (the leader too). */
  readonly membership: boolean;
  /** Ask leaders to hand over leadership now and then. */
  readonly transfers: boolean;
  readonly trace?: (line: string) => void;
  /** Sees every message sent (for encoding tests). */
  readonly onMessage?: (m: Message) => void;
}

export interface SimStats {
  rounds: number;
  delivered: number;
  writesAcked: number;
  readsServed: number;
  leaders: number;
  snapshotsSent: number;
  confChanges: number;
  crashes: number;
}

export class SimFailure extends Error {
  override readonly name = 'SimFailure';
}

const electionTicks = 8;
const heartbeatTicks = 2;
const keys = ['a', 'b', 'c', 'd'];
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Write {
  readonly id: string;
  readonly key: string;
}

interface KvValue {
  readonly write: string;
  readonly index: number;
}

interface PendingRead {
  readonly context: string;
  readonly key: string;
  /** Every write acknowledged before the read began has an index <= this. */
  readonly ackedIndexMax: number;
  /** The index of the last acknowledged write to `key` before the read began. */
  readonly ackedKeyIndex: number;
  readIndex: LogIndex | undefined;
}

class SimNode {
  readonly id: NodeId;
  /** What survived: entries, hard state and snapshot the driver persisted ("fsynced"). */
  readonly disk = new MemoryStorage();
  raft: Raft | undefined = undefined;
  kv = new Map<string, KvValue>();
  applied = 0;
  confState: ConfState = { voters: [], learners: [] };
  tickRate = 1;
  tickDebt = 0;
  restarts = 0;
  removed = false;
  /** The term in which this node is leader as of its last Ready, or 0. */
  leaderTerm = 0;
  reads: PendingRead[] = [];
  /** A Ready whose persistence is "in progress" (async-persist runs), with the term it was made in. */
  held: { rd: Ready; term: number } | undefined = undefined;
  /** Writes this node proposed, by id, awaiting application here to be acknowledged. */
  proposed = new Set<string>();

  constructor(id: NodeId) {
    this.id = id;
  }
}

export function runSimulation(options: SimOptions): SimStats {
  return new Simulation(options).run();
}

class Simulation {
  private readonly rng: Random;
  private readonly opts: SimOptions;
  private readonly nodes = new Map<NodeId, SimNode>();
  private pool: Message[] = [];
  private round = 0;
  private writeSeq = 0;
  private readSeq = 0;
  /** Per run: 0 sends one entry per MsgApp, which lets an old-term entry reach a majority alone (Figure 8). */
  private readonly messageBytesMax: number;
  /** Per run: Readies are persisted late, with messages and ticks stepped in between (as an async node does). */
  private readonly asyncPersist: boolean;
  /** Per run: the election extensions on or off (their absence makes for more terms and deposed leaders). */
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private dropRate = 0;
  private dupRate = 0;
  private delayRate = 0.2;
  /** Directed links that are cut: "from>to". */
  private cut = new Set<string>();
  /** Leader-down hints (reportPeerDown) on their way to `to`: the transport saw `peer`'s process go away. */
  private hints: { to: NodeId; peer: NodeId; dueRound: number }[] = [];
  private readonly stats: SimStats = {
    rounds: 0,
    delivered: 0,
    writesAcked: 0,
    readsServed: 0,
    leaders: 0,
    snapshotsSent: 0,
    confChanges: 0,
    crashes: 0,
  };

  // ---- checker state ----
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** (index/term) -> content and previous term: the log matching registry. */
  private readonly entryRegistry = new Map<string, { content: string; prevTerm: number }>();
  /** The entries known to be committed (applied somewhere), by index. */
  private readonly committed = new Map<number, { term: number; content: string; commitTermMax: number }>();
  /** Acknowledged writes: id -> log index; and per key, the index of the last acknowledged write. */
  private ackedIndexMax = 0;
  private readonly ackedKeyIndex = new Map<string, number>();
  private readonly writeIndex = new Map<string, number>();

  constructor(opts: SimOptions) {
    this.opts = opts;
    this.rng = simRandom(opts.seed);
    this.messageBytesMax = [0, 0, 60, 1024 * 1024][this.rng.int(0, 4)] ?? 0;
    this.asyncPersist = this.rng.next() < 0.5;
    this.preVote = this.rng.next() < 0.75;
    this.checkQuorum = this.rng.next() < 0.75;
  }

  private fail(message: string): never {
    throw new SimFailure(`seed=${this.opts.seed} nodes=${this.opts.nodes} round=${this.round}: ${message}`);
  }

  private trace(line: string): void {
    if (this.opts.trace !== undefined) this.opts.trace(`[r${this.round}] ${line}`);
  }

  run(): SimStats {
    const ids = Array.from({ length: this.opts.nodes }, (_, k) => nodeId(k + 1));
    for (const id of ids) {
      const node = new SimNode(id);
      bootstrap(node.disk, ids);
      node.tickRate = 0.6 + this.rng.next() * 0.8;
      this.nodes.set(id, node);
      this.start(node);
    }
    for (; this.round < this.opts.rounds; this.round++) {
      this.faults();
      this.deliverHints();
      this.load();
      this.tickAll();
      this.deliverRound();
    }
    this.healAll();
    this.checkLiveness();
    this.stats.rounds = this.round;
    return this.stats;
  }

  // ---- nodes ----

  private start(node: SimNode): void {
    const trace = this.opts.trace;
    node.raft = new Raft({
      id: node.id,
      storage: node.disk,
      random: simRandom(this.opts.seed * 1009 + node.id * 31 + node.restarts),
      electionTicks,
      heartbeatTicks,
      messageEntriesBytesMax: this.messageBytesMax,
      inflightMessagesMax: 4,
      inflightBytesMax: 600,
      uncommittedEntriesBytesMax: 400,
      snapshotChunkBytes: 64,
      learnerCatchUpEntriesMax: 5,
      preVote: this.preVote,
      checkQuorum: this.checkQuorum,
      ...(trace !== undefined ? { trace: (line: string) => this.trace(line) } : {}),
    });
    // The state machine restarts from the persisted snapshot; committed entries after it are applied again.
    const snapshot = node.disk.snapshot();
    node.kv = snapshot.metadata.index > 0 ? decodeKv(snapshot.data) : new Map();
    node.applied = snapshot.metadata.index;
    node.confState = snapshot.metadata.confState;
    node.leaderTerm = 0;
    node.held = undefined;
    node.reads = [];
    node.proposed = new Set();
  }

  private crash(node: SimNode): void {
    this.trace(`crash ${node.id}`);
    node.raft = undefined;
    node.held = undefined;
    node.restarts++;
    this.stats.crashes++;
    // A dead process's sockets close: most peers' transports report it, some late (after a restart, even),
    // some never (a peer whose connection was already down).
    for (const other of this.nodes.values()) {
      if (other === node || this.rng.next() < 0.3) continue;
      this.hints.push({ to: other.id, peer: node.id, dueRound: this.round + this.rng.int(0, 4) });
    }
  }

  /** Delivers the leader-down hints that are due, and now and then a wrong one about a live leader. */
  private deliverHints(): void {
    if (this.rng.next() < 0.02) {
      const leader = this.leaders()[0];
      const followers = this.live().filter((n) => n !== leader);
      const to = followers[this.rng.int(0, followers.length)];
      if (leader !== undefined && to !== undefined) {
        this.hints.push({ to: to.id, peer: leader.id, dueRound: this.round });
      }
    }
    const due = this.hints.filter((h) => h.dueRound <= this.round);
    this.hints = this.hints.filter((h) => h.dueRound > this.round);
    for (const hint of due) {
      const node = this.nodes.get(hint.to);
      if (node?.raft === undefined || node.removed) continue;
      this.trace(`hint to ${hint.to}: peer ${hint.peer} is down`);
      node.raft.reportPeerDown(hint.peer);
      this.process(node);
    }
  }

  private restart(node: SimNode): void {
    this.trace(`restart ${node.id}`);
    this.start(node);
    this.process(node);
  }

  private live(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.raft !== undefined && !n.removed);
  }

  private leaders(): SimNode[] {
    return this.live().filter((n) => n.leaderTerm > 0);
  }

  // ---- the driver: persist, THEN send, apply, advance ----

  /**
   * Drains the node's Ready. In async-persist runs a Ready is often held back (its fsync "in progress") while
   * the node keeps stepping messages and ticks; flush() completes it later. Crashing loses a held Ready.
   */
  private process(node: SimNode): void {
    for (let guard = 0; node.raft !== undefined && node.held === undefined && node.raft.hasReady(); guard++) {
      if (guard > 100) this.fail(`node ${node.id} keeps producing Ready`);
      const raft = node.raft;
      const rd = raft.ready();
      // The term the Ready's soft state and commits belong to.
      const term = raft.term;
      if (this.asyncPersist && this.rng.next() < 0.5) {
        node.held = { rd, term };
        return;
      }
      this.handleReady(node, raft, rd, term);
    }
  }

  private flush(node: SimNode): void {
    const held = node.held;
    if (held === undefined || node.raft === undefined) return;
    node.held = undefined;
    this.handleReady(node, node.raft, held.rd, held.term);
    this.process(node);
  }

  /** Persist, THEN send, apply, advance. */
  private handleReady(node: SimNode, raft: Raft, rd: Ready, term: number): void {
    this.persist(node, rd, term);
    for (const m of rd.messages) this.send(m);
    if (rd.snapshot !== undefined) {
      node.kv = decodeKv(rd.snapshot.data);
      node.applied = rd.snapshot.metadata.index;
      node.confState = rd.snapshot.metadata.confState;
    }
    // `term` bounds the term in which these entries were committed: this node knew of it by then.
    for (const e of rd.committedEntries) this.apply(node, raft, e, term);
    for (const rs of rd.readStates) {
      const read = node.reads.find((r) => r.context === rs.context);
      if (read !== undefined) read.readIndex = rs.index;
    }
    raft.advance();
    this.serveReads(node);
    if (node.removed) {
      this.trace(`node ${node.id} applied its own removal and stops`);
      node.raft = undefined;
      node.held = undefined;
    }
  }

  private persist(node: SimNode, rd: Ready, term: number): void {
    if (rd.softState !== undefined) {
      if (rd.softState.state === 'leader') {
        const other = this.leaderOfTerm.get(term);
        if (other !== undefined && other !== node.id) {
          this.fail(`election safety: ${other} and ${node.id} both lead term ${term}`);
        }
        this.leaderOfTerm.set(term, node.id);
        node.leaderTerm = term;
        this.stats.leaders++;
        this.checkNewLeader(node, term);
      } else {
        node.leaderTerm = 0;
      }
    }
    if (rd.snapshot !== undefined) {
      if (node.leaderTerm > 0) this.fail(`leader ${node.id} installs a snapshot`);
      const err = node.disk.applySnapshot(rd.snapshot);
      if (err !== null) this.fail(`node ${node.id} snapshot: ${err}`);
    }
    const first = rd.entries[0];
    if (first !== undefined) {
      if (node.leaderTerm > 0 && rd.softState === undefined && first.index <= node.disk.lastIndex()) {
        this.fail(`leader append-only: leader ${node.id} overwrites its log at ${first.index}`);
      }
      node.disk.append(rd.entries);
      for (const e of rd.entries) this.registerEntry(node, e);
    }
    if (rd.hardState !== undefined) {
      if (rd.hardState.commit > node.disk.lastIndex()) {
        this.fail(
          `node ${node.id} persists commit ${rd.hardState.commit} past its log ${node.disk.lastIndex()}`,
        );
      }
      node.disk.setHardState(rd.hardState);
    }
  }

  /** Log matching, inductively: equal (index, term) means equal content and equal term just before. */
  private registerEntry(node: SimNode, e: Entry): void {
    const prevTerm = node.disk.term(logIndex(e.index - 1)) ?? -1;
    const key = `${e.index}/${e.term}`;
    const content = entryContent(e);
    const known = this.entryRegistry.get(key);
    if (known === undefined) {
      this.entryRegistry.set(key, { content, prevTerm });
    } else if (
      known.content !== content ||
      (known.prevTerm !== prevTerm && prevTerm !== -1 && known.prevTerm !== -1)
    ) {
      this.fail(`log matching: entry ${key} on ${node.id} differs from another node's`);
    }
  }

  /** Leader completeness: a new leader of term T holds every entry known to be committed in a term < T. */
  private checkNewLeader(node: SimNode, term: number): void {
    const raft = node.raft as Raft;
    const first = raft.status().firstIndex;
    for (const [i, c] of this.committed) {
      if (c.commitTermMax >= term || i < first) continue;
      if (raft.logTerm(logIndex(i)) !== c.term) {
        this.fail(
          `leader completeness: leader ${node.id} (term ${term}) lacks committed entry ${i}/${c.term}`,
        );
      }
    }
  }

  private apply(node: SimNode, raft: Raft, e: Entry, commitTermMax: number): void {
    if (e.index !== node.applied + 1) this.fail(`node ${node.id} applies ${e.index} after ${node.applied}`);
    node.applied = e.index;
    const content = entryContent(e);
    const known = this.committed.get(e.index);
    if (known === undefined) {
      this.committed.set(e.index, { term: e.term, content, commitTermMax });
      for (const leader of this.leaders()) {
        // Leaders of the term it was committed in, or later, hold it.
        if (leader.leaderTerm < commitTermMax) continue;
        const t = leader.raft?.logTerm(e.index);
        const first = leader.raft?.status().firstIndex ?? 0;
        if (e.index >= first && t !== e.term) {
          this.fail(`leader completeness: leader ${leader.id} lacks committed entry ${e.index}/${e.term}`);
        }
      }
    } else if (known.term !== e.term || known.content !== content) {
      this.fail(`state machine safety: node ${node.id} applies a different entry at ${e.index}`);
    }
    if (e.type === 'confChange') {
      const change = decodeConfChange(e.data);
      node.confState = raft.applyConfChange(change);
      this.trace(`node ${node.id} applied ${change.type} ${change.nodeId} at ${e.index}`);
      if (change.type === 'removeNode' && change.nodeId === node.id) node.removed = true;
      if (change.type !== 'removeNode') this.ensureNode(change.nodeId);
      return;
    }
    if (e.data.length === 0) return;
    const write = JSON.parse(decoder.decode(e.data)) as Write;
    node.kv.set(write.key, { write: write.id, index: e.index });
    const firstSeen = !this.writeIndex.has(write.id);
    if (firstSeen) this.writeIndex.set(write.id, e.index);
    if (node.proposed.delete(write.id)) {
      // Acknowledged to the client: the proposing node applied it.
      this.stats.writesAcked++;
      if (e.index > this.ackedIndexMax) this.ackedIndexMax = e.index;
      if (e.index > (this.ackedKeyIndex.get(write.key) ?? 0)) this.ackedKeyIndex.set(write.key, e.index);
    }
  }

  /** Linearizable ReadIndex: a read served at its read index sees every write acknowledged before it began. */
  private serveReads(node: SimNode): void {
    if (node.reads.length === 0) return;
    const waiting: PendingRead[] = [];
    for (const read of node.reads) {
      if (read.readIndex === undefined || read.readIndex > node.applied) {
        waiting.push(read);
        continue;
      }
      if (read.readIndex < read.ackedIndexMax) {
        this.fail(
          `linearizable read: ${read.context} on ${node.id} got read index ${read.readIndex} < acknowledged write at ${read.ackedIndexMax}`,
        );
      }
      const seen = node.kv.get(read.key)?.index ?? 0;
      if (seen < read.ackedKeyIndex) {
        this.fail(
          `linearizable read: ${read.context} of ${read.key} on ${node.id} saw index ${seen} < acknowledged ${read.ackedKeyIndex}`,
        );
      }
      this.stats.readsServed++;
    }
    node.reads = waiting;
  }

  private ensureNode(id: NodeId): void {
    if (this.nodes.has(id)) return;
    const node = new SimNode(id);
    node.tickRate = 0.6 + this.rng.next() * 0.8;
    this.nodes.set(id, node);
    this.start(node);
    this.trace(`started new node ${id}`);
  }

  // ---- network ----

  private send(m: Message): void {
    if (this.opts.onMessage !== undefined) this.opts.onMessage(m);
    if (m.type === 'MsgSnap' && m.offset === 0) this.stats.snapshotsSent++;
    if (this.pool.length >= 5000) this.pool.shift();
    this.pool.push(m);
  }

  private deliver(m: Message): void {
    const to = this.nodes.get(m.to);
    if (to === undefined || to.raft === undefined || to.removed) return;
    if (this.cut.has(`${m.from}>${m.to}`)) return;
    this.stats.delivered++;
    if (this.opts.trace !== undefined) this.trace(`deliver ${describe(m)}`);
    to.raft.step(m);
    if (to.held !== undefined && this.rng.next() < 0.4) this.flush(to);
    this.process(to);
  }

  private deliverRound(): void {
    const batch = this.pool;
    this.pool = [];
    shuffle(batch, this.rng);
    for (const m of batch) {
      const r = this.rng.next();
      if (r < this.delayRate) {
        this.pool.push(m);
        continue;
      }
      if (r < this.delayRate + this.dropRate) continue;
      if (this.rng.next() < this.dupRate) this.pool.push(m);
      this.deliver(m);
    }
  }

  private tickAll(): void {
    for (const node of this.live()) if (node.held !== undefined && this.rng.next() < 0.7) this.flush(node);
    for (const node of this.live()) {
      node.tickDebt += node.tickRate;
      while (node.tickDebt >= 1 && node.raft !== undefined) {
        node.tickDebt -= 1;
        node.raft.tick();
        this.process(node);
      }
    }
  }

  // ---- faults and load ----

  private faults(): void {
    const r = this.rng;
    if (r.next() < 0.05) {
      this.dropRate = r.next() < 0.5 ? 0 : r.next() * 0.3;
      this.dupRate = r.next() < 0.5 ? 0 : r.next() * 0.1;
      this.delayRate = r.next() * 0.5;
    }
    if (r.next() < 0.04) this.partition();
    if (r.next() < 0.05 && this.cut.size > 0) {
      this.trace('heal');
      this.cut.clear();
    }
    if (r.next() < 0.03) {
      const live = this.live();
      const victim = live[r.int(0, live.length)];
      if (victim !== undefined && live.length > 1) this.crash(victim);
    }
    if (r.next() < 0.05) {
      // Leaders are where the interesting histories start (Figure 8): cut one off or crash it.
      const leader = this.leaders()[0];
      if (leader !== undefined && r.next() < 0.5) this.crash(leader);
      else if (leader !== undefined) this.isolate(leader.id);
    }
    for (const node of this.nodes.values()) {
      if (node.raft === undefined && !node.removed && r.next() < 0.1) this.restart(node);
    }
    if (r.next() < 0.05) {
      for (const node of this.live()) node.tickRate = 0.6 + r.next() * 0.8;
    }
    if (r.next() < 0.08) this.snapshot();
    if (this.opts.membership && r.next() < 0.06) this.changeMembership();
    if (this.opts.transfers && r.next() < 0.04) this.transfer();
  }

  private partition(): void {
    const ids = [...this.nodes.keys()];
    this.cut.clear();
    if (this.rng.next() < 0.6) {
      const side = new Set(ids.filter(() => this.rng.next() < 0.5));
      for (const a of ids) for (const b of ids) if (side.has(a) !== side.has(b)) this.cut.add(`${a}>${b}`);
      this.trace(`partition {${[...side].join(',')}} | rest`);
    } else {
      const from = ids[this.rng.int(0, ids.length)];
      for (const b of ids) if (b !== from && this.rng.next() < 0.6) this.cut.add(`${from}>${b}`);
      this.trace(`one-way cut from ${from}: ${[...this.cut].join(' ')}`);
    }
  }

  private isolate(id: NodeId): void {
    this.cut.clear();
    for (const other of this.nodes.keys()) {
      if (other === id) continue;
      this.cut.add(`${id}>${other}`);
      this.cut.add(`${other}>${id}`);
    }
    this.trace(`isolate ${id}`);
  }

  private load(): void {
    const live = this.live();
    if (live.length === 0) return;
    const proposals = this.rng.int(0, 3);
    for (let k = 0; k < proposals; k++) {
      const node = live[this.rng.int(0, live.length)] as SimNode;
      this.propose(node);
    }
    const reads = this.rng.int(0, 3);
    for (let k = 0; k < reads; k++) {
      // Half of the reads go to a node that believes it leads: a deposed leader must not answer them.
      const leaders = this.leaders();
      const pool = leaders.length > 0 && this.rng.next() < 0.5 ? leaders : live;
      this.read(pool[this.rng.int(0, pool.length)] as SimNode);
    }
  }

  private propose(node: SimNode): string | undefined {
    const raft = node.raft;
    if (raft === undefined) return undefined;
    const write: Write = { id: `w${++this.writeSeq}`, key: keys[this.rng.int(0, keys.length)] as string };
    const err = raft.propose(encoder.encode(JSON.stringify(write)));
    if (this.opts.trace !== undefined)
      this.trace(`propose ${write.id} ${write.key} on ${node.id}: ${err ?? 'ok'}`);
    if (err === null) node.proposed.add(write.id);
    this.process(node);
    return err === null ? write.id : undefined;
  }

  private read(node: SimNode): void {
    const raft = node.raft;
    if (raft === undefined || node.reads.length > 20) return;
    const key = keys[this.rng.int(0, keys.length)] as string;
    const context = `${node.id}:${++this.readSeq}`;
    node.reads.push({
      context,
      key,
      ackedIndexMax: this.ackedIndexMax,
      ackedKeyIndex: this.ackedKeyIndex.get(key) ?? 0,
      readIndex: undefined,
    });
    raft.readIndex(context);
    this.process(node);
  }

  private snapshot(): void {
    const live = this.live();
    const node = live[this.rng.int(0, live.length)];
    if (node === undefined || node.applied <= node.disk.snapshot().metadata.index) return;
    const at = logIndex(node.applied);
    const made = node.disk.createSnapshot(at, node.confState, encodeKv(node.kv));
    if (typeof made === 'string') this.fail(`snapshot on ${node.id}: ${made}`);
    const keep = this.rng.int(0, 4);
    if (at - keep >= node.disk.firstIndex()) node.disk.compact(logIndex(at - keep));
    this.trace(`node ${node.id} snapshot at ${at}, compacted to ${node.disk.firstIndex()}`);
  }

  private changeMembership(): void {
    const leader = this.leaders()[0];
    if (leader?.raft === undefined) return;
    const { voters, learners } = leader.confState;
    const all = [...this.nodes.keys()];
    const choice = this.rng.next();
    let change: ConfChange | undefined;
    const learner = learners[0];
    if (learner !== undefined && choice < 0.5) {
      change = { type: 'addVoter', nodeId: learner };
    } else if (choice < 0.75 && voters.length + learners.length < this.opts.nodes + 2) {
      change = { type: 'addLearner', nodeId: nodeId(Math.max(...all) + 1) };
    } else if (voters.length > Math.max(2, this.opts.nodes - 1)) {
      const victim = voters[this.rng.int(0, voters.length)] as NodeId;
      change = { type: 'removeNode', nodeId: victim };
    }
    if (change === undefined) return;
    const err = leader.raft.proposeConfChange(change);
    this.trace(`propose ${change.type} ${change.nodeId} on ${leader.id}: ${err ?? 'ok'}`);
    if (err === null) this.stats.confChanges++;
    this.process(leader);
  }

  private transfer(): void {
    const leader = this.leaders()[0];
    if (leader?.raft === undefined) return;
    const voters = leader.confState.voters.filter((id) => id !== leader.id);
    const target = voters[this.rng.int(0, voters.length)];
    if (target === undefined) return;
    // Half of the requests go through a follower, which forwards them to the leader.
    const live = this.live();
    const asked = this.rng.next() < 0.5 ? leader : (live[this.rng.int(0, live.length)] ?? leader);
    const raft = asked.raft;
    if (raft === undefined) return;
    this.trace(`transfer leadership to ${target}, asked on ${asked.id} (leader ${leader.id})`);
    raft.transferLeader(target);
    this.process(asked);
  }

  // ---- liveness ----

  private healAll(): void {
    this.trace('heal all, restart all, reliable network');
    this.cut.clear();
    this.hints = [];
    this.dropRate = 0;
    this.dupRate = 0;
    this.delayRate = 0; // timely: every message arrives within its round
    // Bounded clock drift: without pre-vote, a node with a stale log and a much faster clock can otherwise
    // keep deposing everyone by timing out first forever (the disruptive server of the dissertation, §9.6).
    for (const node of this.nodes.values()) node.tickRate = 0.9 + this.rng.next() * 0.2;
    for (const node of this.nodes.values()) if (node.raft === undefined && !node.removed) this.restart(node);
  }

  /** After healing: within a bound, a leader exists and a new proposal commits on it. */
  private checkLiveness(): void {
    const bound = this.round + 30 * electionTicks;
    let pending: { node: SimNode; id: string } | undefined;
    for (; this.round < bound; this.round++) {
      this.tickAll();
      this.deliverRound();
      if (pending !== undefined && pending.node.applied > 0) {
        if (this.writeIndex.has(pending.id)) return;
        if (pending.node.leaderTerm === 0 || pending.node.raft === undefined) pending = undefined;
      }
      // The newest leader: one of an older term may never learn it was deposed (without check-quorum nothing
      // tells it; a removed leader hears from no one), and a proposal left with it would wait forever.
      const leader = this.leaders().reduce<SimNode | undefined>(
        (newest, n) => (newest === undefined || n.leaderTerm > newest.leaderTerm ? n : newest),
        undefined,
      );
      if (pending !== undefined && leader !== undefined && leader.leaderTerm > pending.node.leaderTerm) {
        pending = undefined;
      }
      if (pending === undefined) {
        if (leader !== undefined) {
          const id = this.propose(leader);
          if (id !== undefined) pending = { node: leader, id };
        }
      }
    }
    const states = [...this.nodes.values()]
      .map(
        (n) =>
          `${n.id}:${n.removed ? 'removed' : (n.raft?.status().state ?? 'down')}/t${n.raft?.status().term ?? '-'}`,
      )
      .join(' ');
    this.fail(
      `liveness: no leader committed a new proposal within ${30 * electionTicks} rounds after heal (${states})`,
    );
  }
}

function entryContent(e: Entry): string {
  return `${e.type}:${decoder.decode(e.data)}`;
}

function encodeKv(kv: Map<string, KvValue>): Uint8Array {
  // Padded so that the snapshot spans several 64-byte chunks.
  return encoder.encode(JSON.stringify({ kv: [...kv.entries()], pad: 'x'.repeat(100) }));
}

function decodeKv(data: Uint8Array): Map<string, KvValue> {
  const parsed = JSON.parse(decoder.decode(data)) as { kv: [string, KvValue][] };
  return new Map(parsed.kv);
}

function shuffle<T>(items: T[], rng: Random): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i + 1);
    const tmp = items[i] as T;
    items[i] = items[j] as T;
    items[j] = tmp;
  }
}

/** One line per message, for traces. */
export function describe(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} t${m.term}`;
  switch (m.type) {
    case 'MsgApp':
      return `${head} prev=${m.index}/${m.logTerm} commit=${m.commit} entries=[${m.entries.map((e) => `${e.index}/${e.term}`).join(' ')}]`;
    case 'MsgAppResp':
      return `${head} index=${m.index}${m.reject ? ` reject hint=${m.rejectHint}/${m.logTerm}` : ''}`;
    case 'MsgVote':
    case 'MsgPreVote':
      return `${head} last=${m.index}/${m.logTerm}${m.type === 'MsgVote' && m.transfer ? ' transfer' : ''}`;
    case 'MsgVoteResp':
    case 'MsgPreVoteResp':
      return `${head}${m.reject ? ' reject' : ''}`;
    case 'MsgHeartbeat':
      return `${head} commit=${m.commit}${m.context === '' ? '' : ` ctx=${m.context}`}`;
    case 'MsgHeartbeatResp':
      return `${head}${m.context === '' ? '' : ` ctx=${m.context}`}`;
    case 'MsgSnap':
      return `${head} snap=${m.snapshotIndex}/${m.snapshotTerm} bytes=${m.offset}+${m.data.length}/${m.totalBytes}${m.done ? ' done' : ''}`;
    case 'MsgSnapResp':
      return `${head} snap=${m.snapshotIndex} offset=${m.offset}`;
    case 'MsgProp':
      return `${head} entries=${m.entries.length}`;
    case 'MsgTransferLeader':
      return `${head} transferee=${m.transferee}`;
    case 'MsgReadIndex':
      return `${head} ctx=${m.context}`;
    case 'MsgReadIndexResp':
      return `${head} ctx=${m.context} index=${m.index}`;
    case 'MsgTimeoutNow':
      return head;
    default:
      return unreachableMessage(m);
  }
}

function unreachableMessage(m: never): never {
  throw new Error(`unknown message ${JSON.stringify(m)}`);
}

export type { Term };

/**
 * sfc32 seeded through splitmix32 (128 bits of state). The simulator keeps its own generator so that a
 * recorded failing seed keeps replaying the same run even if src/util/clock.ts's generator changes.
 */
export function simRandom(seed: number): Random {
  let x = seed >>> 0;
  const splitmix = (): number => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix();
  let b = splitmix();
  let c = splitmix();
  let d = splitmix();
  const next = (): number => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return { next, int: (min, max) => min + Math.floor(next() * (max - min)) };
}
