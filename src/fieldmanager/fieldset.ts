// Sets of field paths, as Kubernetes' structured-merge-diff keeps them, and their FieldsV1 encoding.
//
// A path is a list of path elements, each written as FieldsV1 writes it: `f:<field>` (a field of an object),
// `k:<json object of key fields>` (an item of a list keyed by fields), `v:<json value>` (an item of a set),
// `i:<index>`. A set holds member paths; a path can be a member and also have members beneath it (FieldsV1
// then writes `".": {}` inside it).

import { isRecord } from '../util/record.js';

export type PathElement = string;
export type FieldPath = readonly PathElement[];

function rank(element: PathElement): number {
  switch (element[0]) {
    case 'f':
      return 0;
    case 'k':
      return 1;
    case 'v':
      return 2;
    default:
      return 3;
  }
}

/** structured-merge-diff's element order: fields, then keyed items, then values, then indices. */
export function compareElements(a: PathElement, b: PathElement): number {
  const r = rank(a) - rank(b);
  if (r !== 0) return r;
  if (a.startsWith('i:') && b.startsWith('i:')) return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

export class FieldSet {
  readonly members = new Set<PathElement>();
  readonly children = new Map<PathElement, FieldSet>();

  static of(...paths: FieldPath[]): FieldSet {
    const set = new FieldSet();
    for (const p of paths) set.insert(p);
    return set;
  }

  insert(path: FieldPath): void {
    const [first, ...rest] = path;
    if (first === undefined) return;
    if (rest.length === 0) {
      this.members.add(first);
      return;
    }
    let child = this.children.get(first);
    if (child === undefined) {
      child = new FieldSet();
      this.children.set(first, child);
    }
    child.insert(rest);
  }

  has(path: FieldPath): boolean {
    const parent = this.node(path.slice(0, -1));
    const last = path[path.length - 1];
    return parent !== undefined && last !== undefined && parent.members.has(last);
  }

  /** The set beneath a path (undefined when nothing is beneath it). */
  node(path: FieldPath): FieldSet | undefined {
    const [first, ...rest] = path;
    if (first === undefined) return this;
    return this.children.get(first)?.node(rest);
  }

  /** Whether the path is a member or has members beneath it. */
  covers(path: FieldPath): boolean {
    return this.has(path) || !(this.node(path)?.isEmpty() ?? true);
  }

  isEmpty(): boolean {
    if (this.members.size > 0) return false;
    for (const child of this.children.values()) if (!child.isEmpty()) return false;
    return true;
  }

  clone(): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) out.members.add(m);
    for (const [e, c] of this.children) out.children.set(e, c.clone());
    return out;
  }

  union(other: FieldSet): FieldSet {
    const out = this.clone();
    for (const m of other.members) out.members.add(m);
    for (const [e, c] of other.children) {
      const mine = out.children.get(e);
      out.children.set(e, mine === undefined ? c.clone() : mine.union(c));
    }
    return out;
  }

  /** The members of this set that are not members of `other` (path by path, not recursively). */
  difference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (!other.members.has(m)) out.members.add(m);
    for (const [e, c] of this.children) {
      const theirs = other.children.get(e);
      const rest = theirs === undefined ? c.clone() : c.difference(theirs);
      if (!rest.isEmpty()) out.children.set(e, rest);
    }
    return out;
  }

  /** Removes every member of `other` and everything beneath those members. */
  recursiveDifference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (!other.members.has(m)) out.members.add(m);
    for (const [e, c] of this.children) {
      if (other.members.has(e)) continue;
      const theirs = other.children.get(e);
      const rest = theirs === undefined ? c.clone() : c.recursiveDifference(theirs);
      if (!rest.isEmpty()) out.children.set(e, rest);
    }
    return out;
  }

  intersection(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (other.members.has(m)) out.members.add(m);
    for (const [e, c] of this.children) {
      const theirs = other.children.get(e);
      if (theirs === undefined) continue;
      const both = c.intersection(theirs);
      if (!both.isEmpty()) out.children.set(e, both);
    }
    return out;
  }

  equals(other: FieldSet): boolean {
    return JSON.stringify(this.toFieldsV1()) === JSON.stringify(other.toFieldsV1());
  }

  /** Member paths: a level's members first, then its children's, each in element order. */
  paths(prefix: FieldPath = []): PathElement[][] {
    const out: PathElement[][] = [];
    for (const m of [...this.members].sort(compareElements)) out.push([...prefix, m]);
    for (const e of [...this.children.keys()].sort(compareElements)) {
      out.push(...(this.children.get(e) as FieldSet).paths([...prefix, e]));
    }
    return out;
  }

  toFieldsV1(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const elements = new Set([...this.members, ...this.children.keys()]);
    for (const e of [...elements].sort(compareElements)) {
      const child = this.children.get(e);
      const inner = child === undefined || child.isEmpty() ? {} : child.toFieldsV1();
      out[e] = this.members.has(e) && child !== undefined && !child.isEmpty() ? { '.': {}, ...inner } : inner;
    }
    return out;
  }

  /** Reads FieldsV1; undefined when it is not of that shape. */
  static fromFieldsV1(value: unknown): FieldSet | undefined {
    const out = new FieldSet();
    return fill(out, value) ? out : undefined;
  }
}

function fill(set: FieldSet, value: unknown): boolean {
  if (!isRecord(value)) return false;
  for (const [element, inner] of Object.entries(value)) {
    if (element === '.') continue;
    if (!/^[fkvi]:/.test(element) || !isRecord(inner)) return false;
    const keys = Object.keys(inner);
    if (keys.length === 0 || keys.includes('.')) set.members.add(element);
    if (keys.some((k) => k !== '.')) {
      const child = new FieldSet();
      if (!fill(child, inner)) return false;
      set.children.set(element, child);
    }
  }
  return true;
}

function showValue(value: unknown): string {
  return JSON.stringify(value);
}

/** A path as kube-apiserver prints it in conflicts: `.spec.containers[name="app"].image`, `[="x"]`, `[0]`. */
export function pathString(path: FieldPath): string {
  return path
    .map((element) => {
      const body = element.slice(2);
      switch (element[0]) {
        case 'f':
          return `.${body}`;
        case 'k': {
          const key = JSON.parse(body) as Record<string, unknown>;
          return `[${Object.entries(key)
            .map(([k, v]) => `${k}=${showValue(v)}`)
            .join(',')}]`;
        }
        case 'v':
          return `[=${showValue(JSON.parse(body))}]`;
        default:
          return `[${body}]`;
      }
    })
    .join('');
}
