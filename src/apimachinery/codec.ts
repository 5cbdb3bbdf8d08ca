// Body codecs: JSON and YAML in both directions. Decoding reports duplicate keys (by field path, as
// kube-apiserver's strict decoder does) so that field validation can warn about them or reject them.

import { isMap, isSeq, parseDocument, stringify, type Node as YamlNode } from 'yaml';
import { errors } from './status.js';

export interface Decoded {
  readonly value: unknown;
  /** Field paths (`metadata.name`, `spec.containers[0].image`) that occur more than once in one object. */
  readonly duplicateFields: readonly string[];
}

function childPath(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}

type Frame =
  | { kind: 'object'; path: string; keys: Set<string>; expectKey: boolean; key: string }
  | { kind: 'array'; path: string; index: number };

/**
 * Finds duplicate keys in a JSON text that JSON.parse accepted. A single pass over the text that tracks only
 * containers and keys: every key string is decoded with JSON.parse so escapes compare correctly.
 */
function jsonDuplicateFields(text: string): string[] {
  const duplicates: string[] = [];
  const stack: Frame[] = [];
  const pathOfValue = (): string => {
    const top = stack[stack.length - 1];
    if (top === undefined) return '';
    return top.kind === 'object' ? childPath(top.path, top.key) : `${top.path}[${top.index}]`;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.kind === 'object' && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) duplicates.push(childPath(top.path, key));
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      stack.push({ kind: 'object', path: pathOfValue(), keys: new Set(), expectKey: true, key: '' });
    } else if (c === '[') {
      stack.push({ kind: 'array', path: pathOfValue(), index: 0 });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.kind === 'object') top.expectKey = true;
      else if (top?.kind === 'array') top.index++;
    }
  }
  return duplicates;
}

export function decodeJson(text: string): Decoded {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw errors.badRequest(`error decoding JSON: ${(error as Error).message}`);
  }
  return { value, duplicateFields: jsonDuplicateFields(text) };
}

function yamlDuplicates(node: unknown, path: string, out: string[]): void {
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const keyNode = pair.key as YamlNode | null;
      const key = String(
        keyNode !== null && typeof keyNode === 'object' && 'value' in keyNode ? keyNode.value : keyNode,
      );
      if (seen.has(key)) out.push(childPath(path, key));
      seen.add(key);
      yamlDuplicates(pair.value, childPath(path, key), out);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => yamlDuplicates(item, `${path}[${index}]`, out));
  }
}

export function decodeYaml(text: string): Decoded {
  const doc = parseDocument(text, { uniqueKeys: false, version: '1.2' });
  if (doc.errors.length > 0) {
    throw errors.badRequest(`error converting YAML to JSON: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
  }
  const duplicateFields: string[] = [];
  yamlDuplicates(doc.contents, '', duplicateFields);
  return { value: doc.toJS({ maxAliasCount: 100 }), duplicateFields };
}

export function encodeJson(value: unknown, pretty: boolean): string {
  return pretty ? `${JSON.stringify(value, null, 2)}\n` : `${JSON.stringify(value)}\n`;
}

export function encodeYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0 });
}
