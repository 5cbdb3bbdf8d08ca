// Role, ClusterRole, RoleBinding, ClusterRoleBinding (rbac.authorization.<domain>/v1): schemas, defaults,
// validation as kube-apiserver's (rule shape, roleRef kinds, subjects, roleRef immutable) and Table columns.

import {
  domainGroup,
  type DomainContext,
  type KindDeclaration,
  type TableColumn,
} from '../../apimachinery/kind.js';
import { objectSchema, validateName, type ApiObject } from '../../apimachinery/meta.js';
import { s, type Schema } from '../../apimachinery/schema.js';
import type { FieldError } from '../../apimachinery/status.js';
import { ageColumn, labelSelectorSchema, list, nameColumn, record, text } from '../common.js';

export function rbacGroup(ctx: DomainContext): string {
  return domainGroup(ctx, 'rbac.authorization');
}

const policyRuleSchema: Schema = s.obj(
  {
    verbs: s.listAtomic(s.str()),
    apiGroups: s.listAtomic(s.str()),
    resources: s.listAtomic(s.str()),
    resourceNames: s.listAtomic(s.str()),
    nonResourceURLs: s.listAtomic(s.str()),
  },
  ['verbs'],
);

const subjectSchema: Schema = s.obj(
  { kind: s.str(), apiGroup: s.str(), name: s.str(), namespace: s.str() },
  ['kind', 'name'],
  { 'x-kubernetes-map-type': 'atomic' },
);

const roleRefSchema: Schema = s.obj({ apiGroup: s.str(), kind: s.str(), name: s.str() }, [
  'apiGroup',
  'kind',
  'name',
]);

function strings(value: unknown): string[] {
  return list(value).filter((v): v is string => typeof v === 'string');
}

function validateRules(object: ApiObject, namespaced: boolean): FieldError[] {
  const out: FieldError[] = [];
  list(object.rules).forEach((raw, i) => {
    const rule = record(raw);
    const path = `rules[${i}]`;
    const urls = strings(rule.nonResourceURLs);
    const resources = strings(rule.resources);
    const groups = strings(rule.apiGroups);
    if (strings(rule.verbs).length === 0)
      out.push({
        type: 'FieldValueRequired',
        field: `${path}.verbs`,
        detail: 'verbs must contain at least one value',
      });
    if (urls.length > 0) {
      if (namespaced) {
        out.push({
          type: 'FieldValueInvalid',
          field: `${path}.nonResourceURLs`,
          value: urls,
          detail: 'namespaced rules cannot apply to non-resource URLs',
        });
      }
      if (groups.length > 0 || resources.length > 0 || strings(rule.resourceNames).length > 0) {
        out.push({
          type: 'FieldValueInvalid',
          field: `${path}.nonResourceURLs`,
          value: urls,
          detail: 'rules cannot apply to both regular resources and non-resource URLs',
        });
      }
      return;
    }
    if (groups.length === 0) {
      out.push({
        type: 'FieldValueRequired',
        field: `${path}.apiGroups`,
        detail: 'resource rules must supply at least one api group',
      });
    }
    if (resources.length === 0) {
      out.push({
        type: 'FieldValueRequired',
        field: `${path}.resources`,
        detail: 'resource rules must supply at least one resource',
      });
    }
  });
  return out;
}

function validateBinding(object: ApiObject, group: string, namespaced: boolean): FieldError[] {
  const out: FieldError[] = [];
  const roleRef = record(object.roleRef);
  if (text(roleRef.apiGroup) !== group) {
    out.push({
      type: 'FieldValueNotSupported',
      field: 'roleRef.apiGroup',
      value: text(roleRef.apiGroup),
      detail: `supported values: "${group}"`,
    });
  }
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
  const kind = text(roleRef.kind);
  if (!kinds.includes(kind)) {
    out.push({
      type: 'FieldValueNotSupported',
      field: 'roleRef.kind',
      value: kind,
      detail: `supported values: ${kinds.map((k) => `"${k}"`).join(', ')}`,
    });
  }
  const roleName = text(roleRef.name);
  if (roleName === '') out.push({ type: 'FieldValueRequired', field: 'roleRef.name' });
  else
    for (const detail of validateName('path-segment', roleName))
      out.push({ type: 'FieldValueInvalid', field: 'roleRef.name', value: roleName, detail });
  list(object.subjects).forEach((raw, i) => {
    const subject = record(raw);
    const path = `subjects[${i}]`;
    const name = text(subject.name);
    const subjectGroup = text(subject.apiGroup);
    if (name === '') out.push({ type: 'FieldValueRequired', field: `${path}.name` });
    switch (text(subject.kind)) {
      case 'ServiceAccount':
        if (name !== '')
          for (const detail of validateName('dns-subdomain', name))
            out.push({ type: 'FieldValueInvalid', field: `${path}.name`, value: name, detail });
        if (subjectGroup !== '')
          out.push({
            type: 'FieldValueNotSupported',
            field: `${path}.apiGroup`,
            value: subjectGroup,
            detail: 'supported values: ""',
          });
        if (!namespaced && text(subject.namespace) === '')
          out.push({ type: 'FieldValueRequired', field: `${path}.namespace` });
        break;
      case 'User':
      case 'Group':
        if (subjectGroup !== group)
          out.push({
            type: 'FieldValueNotSupported',
            field: `${path}.apiGroup`,
            value: subjectGroup,
            detail: `supported values: "${group}"`,
          });
        break;
      default:
        out.push({
          type: 'FieldValueNotSupported',
          field: `${path}.kind`,
          value: text(subject.kind),
          detail: 'supported values: "ServiceAccount", "User", "Group"',
        });
    }
  });
  return out;
}

/** As kube-apiserver's defaulting: User and Group subjects get the RBAC group, service accounts ''. */
function defaultSubjects(object: ApiObject, group: string): void {
  for (const raw of list(object.subjects)) {
    const subject = record(raw);
    if (subject.apiGroup !== undefined && subject.apiGroup !== '') continue;
    if (subject.kind === 'User' || subject.kind === 'Group') subject.apiGroup = group;
    else if (subject.kind === 'ServiceAccount') subject.apiGroup = '';
  }
}

function roleRefUnchanged(object: ApiObject, old: ApiObject): FieldError[] {
  const now = record(object.roleRef);
  const before = record(old.roleRef);
  if (['apiGroup', 'kind', 'name'].every((k) => text(now[k]) === text(before[k]))) return [];
  return [{ type: 'FieldValueInvalid', field: 'roleRef', value: now, detail: 'cannot change roleRef' }];
}

function subjectsOf(object: ApiObject, kind: string): string {
  return list(object.subjects)
    .map(record)
    .filter((sub) => sub.kind === kind)
    .map((sub) => (kind === 'ServiceAccount' ? `${text(sub.namespace)}/${text(sub.name)}` : text(sub.name)))
    .join(', ');
}

function bindingColumns(): TableColumn[] {
  const wide = (name: string, kind: string): TableColumn => ({
    name,
    type: 'string',
    description: `${name} in the binding`,
    priority: 1,
    cell: (o) => subjectsOf(o, kind),
  });
  return [
    nameColumn(),
    {
      name: 'Role',
      type: 'string',
      description: 'RoleRef is the reference to the role this binding applies to',
      priority: 0,
      cell: (o) => `${text(record(o.roleRef).kind)}/${text(record(o.roleRef).name)}`,
    },
    ageColumn(),
    wide('Users', 'User'),
    wide('Groups', 'Group'),
    wide('ServiceAccounts', 'ServiceAccount'),
  ];
}

function roleKind(ctx: DomainContext, cluster: boolean): KindDeclaration {
  return {
    group: rbacGroup(ctx),
    versions: ['v1'],
    kind: cluster ? 'ClusterRole' : 'Role',
    plural: cluster ? 'clusterroles' : 'roles',
    singular: cluster ? 'clusterrole' : 'role',
    shortNames: [],
    categories: [],
    namespaced: !cluster,
    nameRule: 'path-segment',
    schema: objectSchema({
      rules: s.listAtomic(policyRuleSchema),
      ...(cluster
        ? { aggregationRule: s.obj({ clusterRoleSelectors: s.listAtomic(labelSelectorSchema) }) }
        : {}),
    }),
    allowCreateOnUpdate: true,
    statusSubresource: false,
    strategy: { validate: (o) => validateRules(o, !cluster) },
  };
}

function bindingKind(ctx: DomainContext, cluster: boolean): KindDeclaration {
  const group = rbacGroup(ctx);
  return {
    group,
    versions: ['v1'],
    kind: cluster ? 'ClusterRoleBinding' : 'RoleBinding',
    plural: cluster ? 'clusterrolebindings' : 'rolebindings',
    singular: cluster ? 'clusterrolebinding' : 'rolebinding',
    shortNames: [],
    categories: [],
    namespaced: !cluster,
    nameRule: 'path-segment',
    schema: objectSchema({ subjects: s.listAtomic(subjectSchema), roleRef: roleRefSchema }, ['roleRef']),
    allowCreateOnUpdate: true,
    statusSubresource: false,
    tableColumns: bindingColumns(),
    strategy: {
      prepareForCreate: (o) => defaultSubjects(o, group),
      prepareForUpdate: (o) => defaultSubjects(o, group),
      validate: (o) => validateBinding(o, group, !cluster),
      validateUpdate: roleRefUnchanged,
    },
  };
}

export function rbacKinds(ctx: DomainContext): KindDeclaration[] {
  return [roleKind(ctx, false), roleKind(ctx, true), bindingKind(ctx, false), bindingKind(ctx, true)];
}
