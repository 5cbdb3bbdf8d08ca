// Identities in a replicated cluster. A member's NodeId derives from its name and the cluster's from its token,
// so every node computes the same ones from the same flags (as etcd derives IDs from its configuration).

import { nodeId, type NodeId } from '../util/brand.js';

/** FNV-1a, 32 bits: stable, fast, and well spread for short names. */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** Never 0 (0 means "none" in the Raft core). */
export function nodeIdFromName(name: string): NodeId {
  const hash = fnv1a32(`member:${name}`);
  return nodeId(hash === 0 ? 1 : hash);
}

export function clusterIdFromToken(token: string): string {
  return fnv1a32(`cluster:${token}`).toString(16).padStart(8, '0');
}

export interface Member {
  readonly id: NodeId;
  readonly name: string;
  readonly peerUrl: string;
}

/** Parses etcd's `--initial-cluster` form: `name1=https://host:port,name2=https://host:port`. */
export function parseInitialCluster(text: string): Member[] {
  const members: Member[] = [];
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`--initial-cluster: "${part}" is not name=peer-url`);
    const name = part.slice(0, eq);
    const peerUrl = part.slice(eq + 1);
    let url: URL;
    try {
      url = new URL(peerUrl);
    } catch {
      throw new Error(`--initial-cluster: "${peerUrl}" of member ${name} is not a URL`);
    }
    if (url.protocol !== 'https:' || url.port === '') {
      throw new Error(`--initial-cluster: the peer URL of ${name} must be https://host:port, got ${peerUrl}`);
    }
    if (members.some((m) => m.name === name))
      throw new Error(`--initial-cluster: member ${name} appears twice`);
    const id = nodeIdFromName(name);
    if (members.some((m) => m.id === id))
      throw new Error(`--initial-cluster: member names ${name} collide; rename one`);
    members.push({ id, name, peerUrl });
  }
  if (members.length === 0) throw new Error('--initial-cluster is empty');
  return members;
}

export function hostPort(peerUrl: string): { host: string; port: number } {
  const url = new URL(peerUrl);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) };
}
