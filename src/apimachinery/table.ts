// Table output (spec 2.5): per-kind columns, or the default Name / Created At table.

import type { KindDeclaration, TableColumn } from './kind.js';
import type { ApiObject } from './meta.js';

export const defaultColumns: readonly TableColumn[] = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description:
      'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically.',
    priority: 0,
    cell: (o) => o.metadata.name ?? '',
  },
  {
    name: 'Created At',
    type: 'date',
    description:
      'CreationTimestamp is a timestamp representing the server time when this object was created.',
    priority: 0,
    cell: (o) => o.metadata.creationTimestamp ?? '',
  },
];

/** kubectl's age column: seconds → `5s`, `3m`, `2d`; matches HumanDuration closely enough for reading. */
export function age(timestamp: string | null | undefined, nowMs: number = Date.now()): string {
  if (timestamp === undefined || timestamp === null) return '<unknown>';
  const seconds = Math.max(0, Math.floor((nowMs - Date.parse(timestamp)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

export interface TableOptions {
  readonly metaGroup: string;
  readonly version: 'v1' | 'v1beta1';
  /** `includeObject=None|Object|Metadata` (kubectl asks for Object). Default Metadata. */
  readonly includeObject: 'None' | 'Object' | 'Metadata';
  readonly listMeta?: Record<string, unknown>;
}

export function toTable(
  decl: KindDeclaration,
  objects: readonly ApiObject[],
  options: TableOptions,
): Record<string, unknown> {
  const columns = decl.tableColumns ?? defaultColumns;
  return {
    kind: 'Table',
    apiVersion: `${options.metaGroup}/${options.version}`,
    metadata: options.listMeta ?? {},
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description,
      priority: c.priority,
    })),
    rows: objects.map((object) => ({
      cells: columns.map((c) => c.cell(object)),
      ...(options.includeObject === 'None'
        ? {}
        : {
            object:
              options.includeObject === 'Object'
                ? object
                : {
                    kind: 'PartialObjectMetadata',
                    apiVersion: `${options.metaGroup}/v1`,
                    metadata: object.metadata,
                  },
          }),
    })),
  };
}
