// `--net netns`: each node in a network namespace of its own, joined by veth pairs to a private bridge, with
// addresses assigned here (a /24 of 10.213.0.0/16 that no route of the machine overlaps; the bridge holds .254 so
// the runner reaches each node's API). Faults are kernel-level instead of proxy settings:
// - a cut link A->B is a blackhole route to B inside A's namespace (`ip route`; no iptables): A's packets to B
//   are dropped. At the IP level a one-way cut stalls TCP both ways (B's data reaches A, A's ACKs do not), as
//   a one-way drop rule does on a real network;
// - loss is an nftables rule in each node's namespace that drops, at random (`numgen random`), that share of the
//   packets the node sends to its peers (the API's traffic to the runner is left alone, as with proxies); it
//   needs the `nft` binary (Debian's nftables) and the kernel's nf_tables with numgen, nothing from tc;
// - delay is `tc qdisc ... netem` on each node's interface (every packet the node sends, its API replies
//   included) when the kernel has sch_netem. The kernel offers no other way to hold packets back, so on a kernel
//   without it a run that asks for delay fails before it starts, with the reason (see docs/chaos.md).
// Needs root. Every namespace, link, route and rule made here is removed by close(), also when setup fails; a run
// killed before close() leaves names with its PID in them, removed by the next run once that PID is gone.
import { execFileSync } from 'node:child_process';
import type { NodeId } from '../src/util/brand.js';
import { assert, unreachable } from '../src/util/assert.js';
import type { LinkFault } from './proxy.js';
import type { PeerNetwork } from './peer-network.js';

/** Why --net netns cannot run here, or undefined if it can (root, and iproute2's `ip` and `tc`). */
export function netnsUnavailable(uid: number | undefined = process.getuid?.()): string | undefined {
  if (uid !== 0) {
    return '--net netns needs root (it creates network namespaces, veth pairs and a bridge); run as root, or use --net proxy';
  }
  for (const tool of ['ip', 'tc']) {
    try {
      execFileSync(tool, ['-V'], { stdio: 'ignore' });
    } catch {
      return `--net netns needs \`${tool}\` from iproute2 (apt-get install iproute2)`;
    }
  }
  return undefined;
}

const namePrefix = 'stoa-chaos-';
const bridgePrefix = 'stoab';
const vethPrefix = 'stoav';
/** Every node's interface inside its namespace. */
const nodeInterface = 'eth0';

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function quietly(run: () => unknown): void {
  try {
    run();
  } catch {
    // Already gone.
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes namespaces and bridges left by runs whose process is gone (they carry its PID in their names). */
export function removeStale(): void {
  for (const line of ip(['netns', 'list']).split('\n')) {
    const m = new RegExp(`^${namePrefix}(\\d+)-\\w+`).exec(line.trim());
    if (m !== null && !alive(Number(m[1]))) quietly(() => ip(['netns', 'del', m[0]]));
  }
  for (const line of ip(['-o', 'link', 'show', 'type', 'veth']).split('\n')) {
    const m = new RegExp(`^\\d+: (${vethPrefix}(\\d+)x\\d+)[:@]`).exec(line.trim());
    if (m !== null && !alive(Number(m[2]))) quietly(() => ip(['link', 'del', m[1]!]));
  }
  for (const line of ip(['-o', 'link', 'show', 'type', 'bridge']).split('\n')) {
    const m = new RegExp(`^\\d+: (${bridgePrefix}(\\d+))[:@]`).exec(line.trim());
    if (m !== null && !alive(Number(m[2]))) quietly(() => ip(['link', 'del', m[1]!]));
  }
}

/** The third octet of a 10.213.X.0/24 that no route of the machine overlaps. */
function freeSubnet(): number {
  const routes = ip(['-4', 'route', 'show', 'table', 'all'])
    .split('\n')
    .map((line) => line.trim().split(' ')[0] ?? '')
    .filter((dst) => /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(dst));
  const toInt = (a: string): number => a.split('.').reduce((n, part) => n * 256 + Number(part), 0);
  const overlaps = (x: number): boolean => {
    const lo = toInt(`10.213.${x}.0`);
    const hi = lo + 255;
    return routes.some((route) => {
      const [addr = '', bitsText] = route.split('/');
      const bits = bitsText === undefined ? 32 : Number(bitsText);
      const size = 2 ** (32 - bits);
      const start = toInt(addr) - (toInt(addr) % size);
      return start <= hi && lo <= start + size - 1;
    });
  };
  const first = process.pid % 250;
  for (let k = 0; k < 250; k++) {
    const x = (first + k) % 250;
    if (!overlaps(x)) return x;
  }
  throw new Error('--net netns: no free /24 in 10.213.0.0/16');
}

/** The nftables table that holds a namespace's loss rule. */
const lossTable = 'stoa_chaos_loss';

/** Runs `nft -f -` with `script` inside namespace `ns`. */
function nft(ns: string, script: string): void {
  execFileSync('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], {
    input: script,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
}

/**
 * A rule set dropping `probability` of the packets sent to `peers` (numgen: a fresh random number per packet),
 * counting what it drops.
 */
export function lossRules(peers: readonly string[], probability: number): string {
  assert(probability >= 0 && probability <= 1, `loss probability ${probability}`);
  const dropBelow = Math.round(probability * 10_000);
  return `table inet ${lossTable} {
  chain output {
    type filter hook output priority 0; policy accept;
    ip daddr { ${peers.join(', ')} } numgen random mod 10000 < ${dropBelow} counter drop
  }
}
`;
}

/** What this kernel and machine can inject (tried in a scratch namespace): netem delay, nftables loss. */
export interface NetnsCapabilities {
  /** tc's netem qdisc (sch_netem): delay. */
  readonly netem: boolean;
  /** The `nft` binary and nf_tables with numgen: loss. */
  readonly nftLoss: boolean;
}

function probeCapabilities(): NetnsCapabilities {
  const scratch = `${namePrefix}${process.pid}-probe`;
  const works = (run: () => unknown): boolean => {
    try {
      run();
      return true;
    } catch {
      return false;
    }
  };
  try {
    ip(['netns', 'add', scratch]);
    ip(['-n', scratch, 'link', 'set', 'lo', 'up']);
    return {
      netem: works(() =>
        execFileSync(
          'ip',
          ['netns', 'exec', scratch, 'tc', 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms'],
          { stdio: 'ignore' },
        ),
      ),
      nftLoss: works(() => nft(scratch, lossRules(['127.0.0.2'], 0.5))),
    };
  } catch {
    return { netem: false, nftLoss: false };
  } finally {
    quietly(() => ip(['netns', 'del', scratch]));
  }
}

/** Why a netns run cannot inject `loss` or `delay` here, or undefined if it can. */
export function faultUnavailable(
  kind: 'loss' | 'delay',
  capabilities: NetnsCapabilities,
): string | undefined {
  switch (kind) {
    case 'loss':
      return capabilities.nftLoss
        ? undefined
        : "--net netns: loss needs nftables (the `nft` binary: apt-get install nftables; and the kernel's nf_tables " +
            'with numgen); install it, drop loss from --faults, or use --net proxy';
    case 'delay':
      return capabilities.netem
        ? undefined
        : '--net netns: this kernel has no tc netem (sch_netem), and nothing else in the kernel holds packets back, ' +
            'so delay cannot be injected in netns mode (loss can: nftables); drop delay from --faults, or use --net proxy';
    default:
      return unreachable(kind);
  }
}

export class NetnsNetwork implements PeerNetwork {
  /** Cut directed links, as "from->to" of node indices. */
  private readonly cut = new Set<string>();
  private netemOn = false;
  private lossOn = false;
  private closed = false;

  private constructor(
    private readonly ids: readonly NodeId[],
    /** The address of each node, by index. */
    readonly hosts: readonly string[],
    /** The bridge's address (the runner's side). */
    readonly gateway: string,
    private readonly namespaces: readonly string[],
    private readonly bridge: string,
    /** What can be injected here: delay (netem), loss (nftables). */
    readonly capabilities: NetnsCapabilities,
  ) {}

  /**
   * Creates the bridge and one namespace per node. Fails, with the reason, unless every kind in `faults` can be
   * injected here (loss: nftables; delay: netem). On any failure, removes whatever it created.
   */
  static create(
    ids: readonly NodeId[],
    options: { readonly faults: readonly ('loss' | 'delay')[] },
  ): NetnsNetwork {
    const unavailable = netnsUnavailable();
    if (unavailable !== undefined) throw new Error(unavailable);
    removeStale();
    const capabilities = probeCapabilities();
    for (const kind of options.faults) {
      const reason = faultUnavailable(kind, capabilities);
      if (reason !== undefined) throw new Error(reason);
    }
    const x = freeSubnet();
    const bridge = `${bridgePrefix}${process.pid}`;
    const gateway = `10.213.${x}.254`;
    const hosts = ids.map((_, i) => `10.213.${x}.${i + 1}`);
    const namespaces = ids.map((_, i) => `${namePrefix}${process.pid}-${i}`);
    const network = new NetnsNetwork(ids, hosts, gateway, namespaces, bridge, capabilities);
    try {
      ip(['link', 'add', bridge, 'type', 'bridge']);
      ip(['addr', 'add', `${gateway}/24`, 'dev', bridge]);
      ip(['link', 'set', bridge, 'up']);
      for (const [i, ns] of namespaces.entries()) {
        const veth = `${vethPrefix}${process.pid}x${i}`;
        ip(['netns', 'add', ns]);
        ip(['link', 'add', veth, 'type', 'veth', 'peer', 'name', nodeInterface, 'netns', ns]);
        ip(['link', 'set', veth, 'master', bridge, 'up']);
        ip(['-n', ns, 'addr', 'add', `${hosts[i]}/24`, 'dev', nodeInterface]);
        ip(['-n', ns, 'link', 'set', nodeInterface, 'up']);
        ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      }
    } catch (error) {
      network.removeAll();
      throw new Error(`--net netns: setting up the namespaces failed: ${(error as Error).message}`);
    }
    return network;
  }

  /** The command a node's process is started through: it enters the namespace, then execs the node. */
  launchPrefix(index: number): readonly string[] {
    const ns = this.namespaces[index];
    assert(ns !== undefined, `no node ${index}`);
    return ['ip', 'netns', 'exec', ns];
  }

  /** The namespaces and the bridge as created (for tests and reports). */
  get names(): { readonly namespaces: readonly string[]; readonly bridge: string } {
    return { namespaces: this.namespaces, bridge: this.bridge };
  }

  private index(id: NodeId): number {
    const i = this.ids.indexOf(id);
    assert(i >= 0, `unknown node ${id}`);
    return i;
  }

  setFault(from: NodeId, to: NodeId, fault: LinkFault): void {
    const a = this.index(from);
    const b = this.index(to);
    const key = `${a}->${b}`;
    switch (fault.kind) {
      case 'partition':
        if (this.cut.has(key)) return;
        ip(['-n', this.namespaces[a]!, 'route', 'add', 'blackhole', `${this.hosts[b]}/32`]);
        this.cut.add(key);
        return;
      case 'pass':
        if (!this.cut.has(key)) return;
        ip(['-n', this.namespaces[a]!, 'route', 'del', 'blackhole', `${this.hosts[b]}/32`]);
        this.cut.delete(key);
        return;
      case 'loss':
      case 'delay':
        throw new Error(
          '--net netns: loss and delay apply to every link of a node (setFaultAll), not one link',
        );
      default:
        return unreachable(fault);
    }
  }

  cutOneWay(from: NodeId, to: NodeId): void {
    this.setFault(from, to, { kind: 'partition' });
  }

  partition(groups: readonly (readonly NodeId[])[]): void {
    const groupOf = new Map<NodeId, number>();
    groups.forEach((group, index) => group.forEach((id) => groupOf.set(id, index)));
    assert(groupOf.size === this.ids.length, 'every node must be in exactly one group');
    for (const from of this.ids) {
      for (const to of this.ids) {
        if (from === to) continue;
        const cut = groupOf.get(from) !== groupOf.get(to);
        this.setFault(from, to, cut ? { kind: 'partition' } : { kind: 'pass' });
      }
    }
  }

  isolate(id: NodeId): void {
    this.partition([[id], this.ids.filter((other) => other !== id)]);
  }

  setFaultAll(fault: LinkFault): void {
    switch (fault.kind) {
      case 'pass':
      case 'partition':
        for (const from of this.ids)
          for (const to of this.ids) if (from !== to) this.setFault(from, to, fault);
        if (fault.kind === 'pass') {
          this.netemOff();
          this.lossOff();
        }
        return;
      case 'loss':
        this.lossAll(fault.probability);
        return;
      case 'delay':
        this.netemAll(['delay', `${fault.delayMs}ms`, `${fault.jitterMs}ms`]);
        return;
      default:
        return unreachable(fault);
    }
  }

  healAll(): void {
    this.setFaultAll({ kind: 'pass' });
  }

  /** In every namespace, drops `probability` of the packets sent to the other nodes (replaces an earlier rate). */
  private lossAll(probability: number): void {
    const reason = faultUnavailable('loss', this.capabilities);
    if (reason !== undefined) throw new Error(reason);
    for (const [i, ns] of this.namespaces.entries()) {
      const peers = this.hosts.filter((_, j) => j !== i);
      // Deleting and adding the table in one nft transaction: never a moment with two rules or none.
      nft(ns, `${this.lossOn ? `delete table inet ${lossTable}\n` : ''}${lossRules(peers, probability)}`);
    }
    this.lossOn = true;
  }

  private lossOff(): void {
    if (!this.lossOn) return;
    for (const ns of this.namespaces) quietly(() => nft(ns, `delete table inet ${lossTable}\n`));
    this.lossOn = false;
  }

  /** The nftables rule sets of node `index`'s namespace, as `nft list ruleset` prints them (for tests). */
  ruleset(index: number): string {
    const ns = this.namespaces[index];
    assert(ns !== undefined, `no node ${index}`);
    return execFileSync('ip', ['netns', 'exec', ns, 'nft', 'list', 'ruleset'], { encoding: 'utf8' });
  }

  private netemAll(parameters: readonly string[]): void {
    const reason = faultUnavailable('delay', this.capabilities);
    if (reason !== undefined) throw new Error(reason);
    for (const ns of this.namespaces) {
      execFileSync(
        'ip',
        ['netns', 'exec', ns, 'tc', 'qdisc', 'replace', 'dev', nodeInterface, 'root', 'netem', ...parameters],
        {
          stdio: 'ignore',
        },
      );
    }
    this.netemOn = true;
  }

  private netemOff(): void {
    if (!this.netemOn) return;
    for (const ns of this.namespaces) {
      quietly(() =>
        execFileSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', nodeInterface, 'root'], {
          stdio: 'ignore',
        }),
      );
    }
    this.netemOn = false;
  }

  private removeAll(): void {
    // Deleting a veth deletes the pair at once (a namespace's devices otherwise go in the kernel's own time);
    // routes and qdiscs go with the namespace.
    for (const i of this.namespaces.keys())
      quietly(() => ip(['link', 'del', `${vethPrefix}${process.pid}x${i}`]));
    for (const ns of this.namespaces) quietly(() => ip(['netns', 'del', ns]));
    quietly(() => ip(['link', 'del', this.bridge]));
  }

  /** Removes every namespace, link and route made here. Call after the node processes are gone. Safe twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.removeAll();
  }
}
