// Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!`) and field selectors (`=`, `==`, `!=`), parsed
// from query parameters into requirements that match against string maps.

import { unreachable } from '../util/assert.js';
import { errors } from './status.js';

export type Requirement =
  | { readonly key: string; readonly op: 'in'; readonly values: readonly string[] }
  | { readonly key: string; readonly op: 'notin'; readonly values: readonly string[] }
  | { readonly key: string; readonly op: 'exists' }
  | { readonly key: string; readonly op: '!' };

export type Selector = readonly Requirement[];

export function matches(selector: Selector, fields: Readonly<Record<string, string>>): boolean {
  return selector.every((r) => {
    const value = Object.hasOwn(fields, r.key) ? fields[r.key] : undefined;
    switch (r.op) {
      case 'in':
        return value !== undefined && r.values.includes(value);
      case 'notin':
        return value === undefined || !r.values.includes(value);
      case 'exists':
        return value !== undefined;
      case '!':
        return value === undefined;
      default:
        return unreachable(r);
    }
  });
}

const labelKeyPattern =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValuePattern = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Splits at commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim());
}

function checkLabel(key: string, values: readonly string[], selectorText: string): void {
  if (!labelKeyPattern.test(key) || key.length > 316) {
    throw errors.badRequest(`unable to parse requirement: invalid label key "${key}" in "${selectorText}"`);
  }
  for (const v of values) {
    if (!labelValuePattern.test(v) || v.length > 63) {
      throw errors.badRequest(
        `unable to parse requirement: invalid label value: "${v}" in "${selectorText}"`,
      );
    }
  }
}

export function parseLabelSelector(text: string | undefined): Selector {
  if (text === undefined || text.trim() === '') return [];
  const out: Requirement[] = [];
  for (const term of splitTerms(text)) {
    if (term === '') throw errors.badRequest(`unable to parse requirement: found '', expected: identifier`);
    let m: RegExpMatchArray | null;
    if ((m = /^!\s*([^\s!=(),]+)$/.exec(term)) !== null) {
      const key = m[1] ?? '';
      checkLabel(key, [], text);
      out.push({ key, op: '!' });
    } else if ((m = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(term)) !== null) {
      const [, key = '', op, value = ''] = m;
      checkLabel(key, [value], text);
      out.push(op === '!=' ? { key, op: 'notin', values: [value] } : { key, op: 'in', values: [value] });
    } else if ((m = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term)) !== null) {
      const [, key = '', op, list = ''] = m;
      const values = list.split(',').map((v) => v.trim());
      checkLabel(key, values, text);
      out.push({ key, op: op === 'in' ? 'in' : 'notin', values });
    } else if ((m = /^([^\s!=(),]+)$/.exec(term)) !== null) {
      const key = m[1] ?? '';
      checkLabel(key, [], text);
      out.push({ key, op: 'exists' });
    } else {
      throw errors.badRequest(`unable to parse requirement: invalid selector term "${term}" in "${text}"`);
    }
  }
  return out;
}

/** Field selectors: only `=`, `==` and `!=`, on the fields the kind makes selectable. */
export function parseFieldSelector(text: string | undefined, selectable: ReadonlySet<string>): Selector {
  if (text === undefined || text.trim() === '') return [];
  const out: Requirement[] = [];
  for (const term of splitTerms(text)) {
    const m = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (m === null) throw errors.badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    const [, key = '', op, value = ''] = m;
    if (!selectable.has(key)) {
      throw errors.badRequest(`field label not supported: ${key}`);
    }
    out.push(op === '!=' ? { key, op: 'notin', values: [value] } : { key, op: 'in', values: [value] });
  }
  return out;
}
